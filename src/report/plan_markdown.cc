#include "report/plan_markdown.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "report/chain_markdown.h"
#include "report/markdown_text.h"
#include "report/module_names.h"
#include "report/plan_names.h"

namespace npufuse::report {

namespace {

using plan::Candidate;
using plan::Plan;
using plan::Status;

struct Words {
  const char* title;
  const char* tool_line;
  const char* inputs;
  const char* file_header;
  const char* config;
  const char* none_given;
  const char* deployment_header;
  const char* chip;
  const char* parallel;
  const char* quant;
  const char* stage;
  const char* torch_npu;
  const char* deploy_file;
  const char* rules;
  const char* catalog;
  const char* embedded;
  const char* unknown;
  const char* facts;
  const char* facts_known;
  const char* fact_header;
  const char* facts_none;
  const char* facts_asked;
  const char* facts_asked_intro;
  const char* facts_asked_none;
  const char* needed_by;
  const char* step1;
  const char* step1_intro;
  const char* step1_header;
  const char* no_candidates;
  const char* step2;
  const char* step2_intro;
  const char* covered_by;
  const char* left_open;
  const char* blocked;
  const char* one_place;
  const char* places;
  const char* step3;
  const char* status;
  const char* where;
  const char* one_more_place;
  const char* more_places;
  const char* parts;
  const char* instance;
  const char* stages;
  const char* apis;
  const char* rule;
  const char* id;
  const char* confidence;
  const char* evidence;
  const char* checks;
  const char* check_header;
  const char* no_checks;
  const char* missing_facts;
  const char* prerequisites;
  const char* mechanical;
  const char* manual;
  const char* at;
  const char* escapes;
  const char* blocking;
  const char* near_miss;
  const char* cut;
  const char* requirements;
  const char* requirements_none;
  const char* subgraph;
  const char* inputs_word;
  const char* outputs_word;
  const char* dtype;
  const char* layout;
  const char* why_nothing_fits;
  const char* step4;
  const char* step4_intro;
  const char* notes;
  const char* alternatives;     // list of the other rules for the same chain, on the preferred one
  const char* alternative;      // said after an alternative's title
  const char* assumed;          // after a value the plan assumed rather than was given
};

const Words kMdEn = {
    "Fusion plan (workflow steps 1–4)",
    "npufuse {} · plan schema {}",
    "Inputs",
    "| file | sha256 |\n|---|---|",
    "Config",
    "none given",
    "| setting | value |\n|---|---|",
    "chip",
    "TP / EP / DP",
    "quantisation",
    "stage",
    "torch_npu version",
    "deployment file",
    "rules",
    "catalog",
    "embedded",
    "unknown",
    "Facts",
    "Known",
    "| fact | value | source |\n|---|---|---|",
    "No facts are known: every check that needs one answers unknown.",
    "Asked for",
    "These facts decide constraint checks that now answer unknown; give them (config, flags or --deploy) and rerun.",
    "No check is waiting for a fact.",
    "needed by",
    "Step 1: modules",
    "Each module with the chains found in it, by status.",
    "| module | chains | candidate | with prerequisites | not applicable | no fused op | stages |\n|---|---|---|---|---|---|---|",
    "No fusable or blocked chain was found in these files.",
    "Step 2: reference-chain coverage",
    "For each module: the torch_npu operators that cover its chains, the sub-chains left without an operator, and the chains a hard constraint blocks.",
    "covered by",
    "left open",
    "blocked",
    "1 place",
    "{} places",
    "Step 3: candidates",
    "status",
    "where",
    "and 1 more place",
    "and {} more places",
    "matched lines",
    "instance",
    "stages",
    "APIs",
    "rule",
    "id",
    "confidence",
    "Evidence",
    "Constraint checks",
    "| API | constraint | answer | severity | what it says | doc |\n|---|---|---|---|---|---|",
    "No catalog constraint was evaluated for this candidate.",
    "Facts to give",
    "Prerequisites",
    "mechanical (a refactor that keeps the numbers; `npufuse apply` lists whether it performs it)",
    "by hand",
    "at",
    "Intermediates the fusion would no longer produce",
    "Blocking constraints",
    "Why the near-miss does not match",
    "Verification cut",
    "New-operator requirements",
    "No sub-chain was left without a fused operator.",
    "subgraph",
    "inputs",
    "outputs",
    "dtype",
    "layout",
    "why nothing fits",
    "Step 4: review",
    "The four review items of the analysis stage; an unchecked item lists what fails and must be resolved before patching.",
    "Notes",
    "Alternatives for this chain (less preferred)",
    "alternative",
    "assumed",
};

const Words kMdZh = {
    "融合方案（工作流程第一至四步）",
    "npufuse {} · 方案格式版本 {}",
    "输入",
    "| 文件 | sha256 |\n|---|---|",
    "配置",
    "未提供",
    "| 设置 | 取值 |\n|---|---|",
    "芯片",
    "TP / EP / DP",
    "量化",
    "阶段",
    "torch_npu 版本",
    "部署文件",
    "规则",
    "算子目录",
    "内置",
    "未知",
    "事实",
    "已知",
    "| 事实 | 取值 | 来源 |\n|---|---|---|",
    "没有已知事实：所有依赖事实的检查都答“未知”。",
    "待补充",
    "以下事实决定了目前答“未知”的约束检查；请通过配置、命令行参数或 --deploy 提供后重新运行。",
    "没有检查在等待事实。",
    "所需检查",
    "第一步：模块",
    "每个模块中找到的链路，按状态计数。",
    "| 模块 | 链路 | 候选 | 候选（需前置改造） | 不适配 | 无现成融合算子 | 阶段 |\n|---|---|---|---|---|---|---|",
    "在这些文件中未找到可融合或被阻塞的链路。",
    "第二步：参考链路覆盖",
    "每个模块：覆盖其链路的 torch_npu 算子、没有算子覆盖的子链路，以及被硬约束阻塞的链路。",
    "覆盖算子",
    "未覆盖",
    "被阻塞",
    "1 处",
    "{} 处",
    "第三步：候选清单",
    "状态",
    "位置",
    "另有 1 处",
    "另有 {} 处",
    "匹配的代码行",
    "实例",
    "阶段",
    "API",
    "规则",
    "编号",
    "置信度",
    "依据",
    "约束检查",
    "| API | 约束 | 结论 | 级别 | 内容 | 文档 |\n|---|---|---|---|---|---|",
    "此候选没有需要检查的算子目录约束。",
    "需提供的事实",
    "前置条件",
    "机械改造（不改变数值的重构；`npufuse apply` 会说明是否自动完成）",
    "需手工完成",
    "位于",
    "融合后不再产生的中间结果",
    "阻塞约束",
    "近似匹配不成立的原因",
    "最小验证切口",
    "新增融合算子需求",
    "没有缺少融合算子的子链路。",
    "子图语义",
    "输入",
    "输出",
    "dtype",
    "layout",
    "无现成算子的依据",
    "第四步：分析阶段审查",
    "分析阶段的四项审查；未勾选的项列出不通过的内容，须在改代码前解决。",
    "备注",
    "同一链路的备选方案（次选）",
    "备选",
    "假定",
};

std::string stages_text(const std::vector<std::string>& stages, Lang lang) {
  std::vector<std::string> words;
  for (const auto& s : stages) words.push_back(stage_label(s, lang));
  return join(words, ", ");
}

std::string location_text(const plan::Location& l) {
  if (l.file.empty()) return "";
  if (l.end_line > l.start_line) return fmt::format("{}:{}-{}", l.file, l.start_line, l.end_line);
  return fmt::format("{}:{}", l.file, l.start_line);
}

std::string pick(const std::string& en, const std::string& zh, Lang lang) {
  return lang == Lang::Zh && !zh.empty() ? zh : en;
}

// Candidates grouped by module, modules in workflow order, candidates in plan order.
std::vector<std::pair<std::string, std::vector<const Candidate*>>> by_module(const Plan& plan) {
  std::map<std::pair<int, std::string>, std::vector<const Candidate*>> groups;
  for (const auto& c : plan.candidates) groups[{module_rank(c.module), c.module}].push_back(&c);
  std::vector<std::pair<std::string, std::vector<const Candidate*>>> out;
  for (auto& [key, list] : groups) out.emplace_back(key.second, std::move(list));
  return out;
}

class Writer {
 public:
  Writer(const Plan& plan, Lang lang) : plan_(plan), lang_(lang), w_(lang == Lang::Zh ? kMdZh : kMdEn) {}

  std::string render() {
    line(fmt::format("# {}", w_.title));
    line();
    line(fmt::format(fmt::runtime(w_.tool_line), plan_.tool_version.empty() ? "?" : plan_.tool_version, plan_.schema_version));
    inputs();
    facts();
    step1();
    step2();
    step3();
    requirements();
    step4();
    notes();
    return out_;
  }

 private:
  void line(const std::string& s = "") { out_ += s + "\n"; }
  // A blank line before the heading unless one is there already.
  void heading(int level, const std::string& s) {
    if (out_.size() < 2 || out_.compare(out_.size() - 2, 2, "\n\n") != 0) line();
    line(std::string(static_cast<size_t>(level), '#') + " " + s);
    line();
  }
  std::string or_unknown(const std::string& s) const { return s.empty() ? w_.unknown : s; }
  static std::string count_words(size_t n, const char* one, const char* many) {
    return n == 1 ? one : fmt::format(fmt::runtime(many), n);
  }
  std::string count_or_dash(int n) const { return n > 0 ? std::to_string(n) : "–"; }

  // The candidate's title in the plan's language (the English one stands in).
  std::string title_of(const Candidate& c) const {
    if (lang_ == Lang::Zh && !c.title_zh.empty()) return c.title_zh;
    return c.title.empty() ? c.id : c.title;
  }

  bool assumed(const std::string& fact) const {
    return std::find(plan_.assumed_facts.begin(), plan_.assumed_facts.end(), fact) != plan_.assumed_facts.end();
  }
  // A world size as given, or the plan's stated default ("1 (assumed)").
  std::string parallel_size(const std::string& fact, int given) const {
    if (given > 0 || !assumed(fact)) return count_or_dash(given);
    const check::Fact* f = plan_.facts.find(fact);
    return f ? fmt::format("{} ({})", f->value.repr(), w_.assumed) : count_or_dash(given);
  }

  void inputs() {
    heading(2, w_.inputs);
    line(w_.file_header);
    for (const auto& f : plan_.files) {
      auto it = plan_.file_hashes.find(f);
      line(fmt::format("| `{}` | {} |", cell(f), it == plan_.file_hashes.end() ? "–" : "`" + it->second.substr(0, 16) + "…`"));
    }
    line();
    const auto& o = plan_.options;
    line(w_.deployment_header);
    line(fmt::format("| {} | {} |", w_.config, o.config.empty() ? w_.none_given : "`" + cell(o.config) + "`"));
    if (!o.deploy.empty()) line(fmt::format("| {} | `{}` |", w_.deploy_file, cell(o.deploy)));
    line(fmt::format("| {} | {} |", w_.chip, or_unknown(o.chip)));
    line(fmt::format("| {} | {} / {} / {} |", w_.parallel, parallel_size("tp", o.tp), count_or_dash(o.ep),
                     count_or_dash(o.dp)));
    line(fmt::format("| {} | {} |", w_.quant, or_unknown(o.quant)));
    line(fmt::format("| {} | {} |", w_.stage, stage_label(o.stage, lang_)));
    line(fmt::format("| {} | {} |", w_.torch_npu, or_unknown(o.torch_npu_version)));
    line(fmt::format("| {} | {} |", w_.rules, o.rules_dir.empty() ? w_.embedded : "`" + cell(o.rules_dir) + "`"));
    line(fmt::format("| {} | {} |", w_.catalog, o.catalog_dir.empty() ? w_.embedded : "`" + cell(o.catalog_dir) + "`"));
  }

  void facts() {
    heading(2, w_.facts);
    heading(3, w_.facts_known);
    if (plan_.facts.all().empty()) {
      line(w_.facts_none);
    } else {
      line(w_.fact_header);
      for (const auto& [name, fact] : plan_.facts.all())
        line(fmt::format("| `{}` | `{}`{} | {} |", cell(name), cell(fact.value.repr()),
                         assumed(name) ? fmt::format(" ({})", w_.assumed) : "", cell(fact.provenance)));
    }
    heading(3, w_.facts_asked);
    if (plan_.unknown_facts.empty()) {
      line(w_.facts_asked_none);
      return;
    }
    line(w_.facts_asked_intro);
    line();
    for (const auto& fact : plan_.unknown_facts) {
      std::vector<std::string> askers;
      for (const auto& c : plan_.candidates)
        if (std::find(c.missing_facts.begin(), c.missing_facts.end(), fact) != c.missing_facts.end())
          askers.push_back("`" + c.id + "`");
      std::string tail = askers.empty() ? "" : fmt::format(" — {}: {}", w_.needed_by, join(askers, ", "));
      line(fmt::format("- `{}`{}", fact, tail));
    }
  }

  void step1() {
    heading(2, w_.step1);
    auto groups = by_module(plan_);
    if (groups.empty()) {
      line(w_.no_candidates);
      return;
    }
    line(w_.step1_intro);
    line();
    line(w_.step1_header);
    for (const auto& [module, list] : groups) {
      int counts[4] = {0, 0, 0, 0};
      std::vector<std::string> stages;
      for (const Candidate* c : list) {
        ++counts[static_cast<int>(c->status)];
        for (const auto& s : c->stages)
          if (std::find(stages.begin(), stages.end(), s) == stages.end()) stages.push_back(s);
      }
      // prefill before decode, whatever order the candidates came in
      std::stable_sort(stages.begin(), stages.end(), [](const std::string& a, const std::string& b) {
        return a == "prefill" && b != "prefill";
      });
      line(fmt::format("| {} | {} | {} | {} | {} | {} | {} |", module_title(module, lang_), list.size(), count_or_dash(counts[0]),
                       count_or_dash(counts[1]), count_or_dash(counts[2]), count_or_dash(counts[3]),
                       stages_text(stages, lang_)));
    }
  }

  void step2() {
    heading(2, w_.step2);
    auto groups = by_module(plan_);
    if (groups.empty()) {
      line(w_.no_candidates);
      return;
    }
    line(w_.step2_intro);
    out_ += reference_chains_markdown(plan_, lang_);
    for (const auto& [module, list] : groups) {
      // api -> number of places, for the fusable chains
      std::map<std::string, int> covering;
      std::vector<std::string> open, blocked;
      for (const Candidate* c : list) {
        int places = 1 + static_cast<int>(c->extra_locations.size());
        if (c->status == Status::Candidate || c->status == Status::CandidateWithPrerequisites)
          for (const auto& api : c->apis) covering[api] += places;
        if (c->status == Status::NoFusedOp)
          open.push_back(c->requirement.subgraph.empty() ? c->title : c->requirement.subgraph);
        if (c->status == Status::NotApplicable) blocked.push_back(title_of(*c));
      }
      line();
      line(fmt::format("**{}**", module_title(module, lang_)));
      line();
      if (!covering.empty()) {
        std::vector<std::string> apis;
        for (const auto& [api, n] : covering)
          apis.push_back(fmt::format("`{}` ({})", api, count_words(n, w_.one_place, w_.places)));
        line(fmt::format("- {}: {}", w_.covered_by, join(apis, ", ")));
      }
      if (!open.empty()) line(fmt::format("- {}: {}", w_.left_open, join(open, "; ")));
      if (!blocked.empty()) line(fmt::format("- {}: {}", w_.blocked, join(blocked, "; ")));
    }
  }

  void step3() {
    heading(2, w_.step3);
    auto groups = by_module(plan_);
    if (groups.empty()) {
      line(w_.no_candidates);
      return;
    }
    int number = 0;
    for (const auto& [module, list] : groups) {
      heading(3, module_title(module, lang_));
      for (const Candidate* c : list) candidate(*c, ++number);
    }
  }

  void candidate(const Candidate& c, int number) {
    line(fmt::format("#### {}. {} — {}", number, title_of(c), status_label(c.status, lang_)));
    line();
    if (!c.alternatives.empty()) {
      std::vector<std::string> others;
      for (const Candidate& a : c.alternatives)
        others.push_back(fmt::format("`{}` ({})", a.rule, status_label(a.status, lang_)));
      line(fmt::format("- {}: {}", w_.alternatives, join(others, ", ")));
    }
    details(c);
    // Each alternative in full: its checks and status are its own.
    char letter = 'a';
    for (const Candidate& a : c.alternatives) {
      line(fmt::format("##### {}{}. {} ({}) — {}", number, letter++, title_of(a), w_.alternative,
                       status_label(a.status, lang_)));
      line();
      details(a);
    }
  }

  void details(const Candidate& c) {
    line(fmt::format("- {}: `{}`", w_.id, c.id));
    if (!c.rule.empty()) line(fmt::format("- {}: `{}`", w_.rule, c.rule));
    std::string where = "`" + location_text(c.location) + "`";
    if (!c.extra_locations.empty()) {
      std::vector<std::string> more;
      for (const auto& l : c.extra_locations) more.push_back("`" + location_text(l) + "`");
      where += fmt::format(" ({}: {})", count_words(c.extra_locations.size(), w_.one_more_place, w_.more_places),
                           join(more, ", "));
    }
    line(fmt::format("- {}: {}", w_.where, where));
    if (c.parts.size() > 1) {
      std::vector<std::string> parts;
      for (const auto& l : c.parts) parts.push_back("`" + location_text(l) + "`");
      line(fmt::format("- {}: {}", w_.parts, join(parts, ", ")));
    }
    if (!c.instance.empty()) line(fmt::format("- {}: `{}`", w_.instance, c.instance));
    line(fmt::format("- {}: {}", w_.stages, stages_text(c.stages, lang_)));
    if (!c.apis.empty()) {
      std::vector<std::string> apis;
      for (const auto& a : c.apis) apis.push_back("`" + a + "`");
      line(fmt::format("- {}: {}", w_.apis, join(apis, ", ")));
    }
    if (c.confidence < 1.0) line(fmt::format("- {}: {:.2f}", w_.confidence, c.confidence));
    bullets(w_.evidence, c.evidence);
    checks(c);
    prerequisites(c);
    bullets(w_.escapes, c.escapes);
    bullets(w_.blocking, c.blocking);
    bullets(w_.near_miss, c.near_miss_reasons);
    if (!c.verification_cut.empty()) {
      line();
      line(fmt::format("{}: {}", w_.cut, c.verification_cut));
    }
    line();
  }

  void bullets(const char* title, const std::vector<std::string>& items) {
    if (items.empty()) return;
    line();
    line(fmt::format("{}:", title));
    line();
    for (const auto& i : items) line("- " + one_line(i));
  }

  void checks(const Candidate& c) {
    if (c.status == Status::NoFusedOp) return;
    line();
    line(fmt::format("{}:", w_.checks));
    line();
    if (c.checks.empty()) {
      line(w_.no_checks);
    } else {
      line(w_.check_header);
      for (const auto& ch : c.checks) {
        std::string what = pick(ch.message_en, ch.message_zh, lang_);
        if (!ch.evidence.empty()) what += " (" + join(ch.evidence, "; ") + ")";
        std::string constraint = "`" + cell(ch.constraint_id) + "`";
        if (!ch.stage.empty()) constraint += " (" + stage_label(ch.stage, lang_) + ")";
        line(fmt::format("| `{}` | {} | **{}** | {} | {} | {} |", cell(ch.api), constraint,
                         answer_label(ch.answer, lang_), cell(ch.severity), cell(what), cell(ch.doc)));
      }
    }
    if (!c.missing_facts.empty()) {
      std::vector<std::string> facts;
      for (const auto& f : c.missing_facts) facts.push_back("`" + f + "`");
      line();
      line(fmt::format("{}: {}", w_.missing_facts, join(facts, ", ")));
    }
  }

  void prerequisites(const Candidate& c) {
    if (c.prerequisites.empty()) return;
    line();
    line(fmt::format("{}:", w_.prerequisites));
    line();
    for (const auto& p : c.prerequisites) {
      std::string where = p.where.file.empty() ? "" : fmt::format(", {} `{}`", w_.at, location_text(p.where));
      line(fmt::format("- `{}` ({}{}): {}", p.id, p.mechanical ? w_.mechanical : w_.manual, where,
                       one_line(pick(p.en, p.zh, lang_))));
    }
  }

  void requirements() {
    heading(2, w_.requirements);
    bool any = false;
    for (const auto& c : plan_.candidates) {
      if (c.status != Status::NoFusedOp) continue;
      any = true;
      const auto& r = c.requirement;
      line(fmt::format("- **{}** `{}` ({})", module_title(c.module, lang_), location_text(c.location), c.id));
      auto field = [&](const char* name, const std::string& value) {
        if (!value.empty()) line(fmt::format("  - {}: {}", name, one_line(value)));
      };
      field(w_.subgraph, r.subgraph);
      field(w_.inputs_word, join(r.inputs, "; "));
      field(w_.outputs_word, join(r.outputs, "; "));
      field(w_.dtype, r.dtype);
      field(w_.layout, r.layout);
      field(w_.stages, stages_text(c.stages, lang_));
      field(w_.why_nothing_fits, r.why_nothing_fits);
    }
    if (!any) line(w_.requirements_none);
  }

  void step4() {
    heading(2, w_.step4);
    line(w_.step4_intro);
    line();
    for (const auto& r : plan_.review) {
      line(fmt::format("- [{}] {}", r.passed ? "x" : " ", pick(r.title_en.empty() ? r.id : r.title_en, r.title_zh, lang_)));
      for (const auto& f : r.failing) line("  - " + one_line(f));
    }
  }

  void notes() {
    if (plan_.notes.empty()) return;
    heading(2, w_.notes);
    for (const auto& n : plan_.notes) line("- " + one_line(n));
  }

  const Plan& plan_;
  Lang lang_;
  const Words& w_;
  std::string out_;
};

}  // namespace

std::string plan_to_markdown(const plan::Plan& plan, Lang lang) { return Writer(plan, lang).render(); }

}  // namespace npufuse::report
