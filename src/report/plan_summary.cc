#include "report/plan_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "plan/fact_flags.h"
#include "report/markdown_text.h"
#include "report/module_names.h"
#include "report/plan_names.h"

namespace npufuse::report {

namespace {

using plan::Candidate;
using plan::Status;

struct SummaryWords {
  const char* header;           // {n} candidates, {files}
  const char* header_one;       // {n} = 1, {files}
  const char* no_candidates;
  const char* deployment;       // prefix of the deployment line
  const char* stage;
  const char* assumed;
  const char* unknown;
  const char* candidates;
  const char* alternatives;     // {n}
  const char* alternative_one;
  const char* no_operator;
  const char* more_operators;   // {0} the first, {1} how many more, {2} how many in all
  const char* facts;
  const char* facts_none;
  const char* deploy_lines;     // the --deploy group's label
  const char* waiting;          // {n} rules, {names}
  const char* more;             // {n}
  const char* blocked;
  const char* blocks_step;      // {chain} ({stage}): {step}
  const char* reports;
  const char* markdown, *html, *json;
  const char* next;             // {plan}
  const char* list_sep;
};

constexpr SummaryWords kEn = {
    "npufuse analyze: {} candidates in {}",
    "npufuse analyze: {} candidate in {}",
    "npufuse analyze: no fusion candidates in {}",
    "Deployment: ",
    "stage",
    "assumed",
    "not given",
    "Candidates (module, fused operator, status, id)",
    " (+{} alternatives)",
    " (+1 alternative)",
    "—",
    "{0} + {1} more",
    "Facts still asked for (the checks that need them answer unknown until they are given)",
    "Facts still asked for: none",
    "--deploy FILE lines",
    " — {} matched rule(s) wait on it: {}",
    " and {} more",
    "Blocked (a hard constraint of the fused operator fails)",
    "blocks {} ({}): {}",
    "Full report",
    "Markdown",
    "HTML",
    "JSON plan",
    "Next: npufuse explain ID --plan {0}   ·   npufuse apply --plan {0} --out DIR",
    ", ",
};

constexpr SummaryWords kZh = {
    "npufuse analyze：{1} 中有 {0} 个候选",
    "npufuse analyze：{1} 中有 {0} 个候选",
    "npufuse analyze：{} 中没有融合候选",
    "部署：",
    "阶段",
    "假定",
    "未给出",
    "候选（模块、融合算子、状态、ID）",
    "（另有 {} 个备选）",
    "（另有 1 个备选）",
    "—",
    "{0} 等 {2} 个算子",
    "仍需提供的事实（给出之前，依赖它们的检查结果为未知）",
    "仍需提供的事实：无",
    "--deploy 文件中的行",
    " — 有 {} 条已匹配的规则等待该事实：{}",
    " 等 {} 条",
    "被阻断（融合算子的硬约束不满足）",
    "阻断 {}（{}）：{}",
    "完整报告",
    "Markdown",
    "HTML",
    "JSON 计划",
    "下一步：npufuse explain ID --plan {0}   ·   npufuse apply --plan {0} --out DIR",
    "、",
};

// Code points, which is what a reader sees as the length of one line.
size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

// Terminal columns: East Asian wide characters (CJK, full-width forms) take two.
size_t display_width(const std::string& s) {
  size_t columns = 0;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t cp = len == 1 ? c : c & (0xFF >> (len + 1));
    for (size_t k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    bool wide = (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) || (cp >= 0xAC00 && cp <= 0xD7A3) ||
                (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
                (cp >= 0xFFE0 && cp <= 0xFFE6) || cp >= 0x20000;
    columns += wide ? 2 : 1;
    i += len;
  }
  return columns;
}

// One line of at most `limit` code points, cut at a code point with "…".
std::string cut_line(const std::string& text, size_t limit) {
  std::string s = one_line(text);
  if (code_points(s) <= limit) return s;
  size_t n = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && n++ == limit - 1) break;
  }
  return s.substr(0, i) + "…";
}

// The value of a deployment fact as the summary shows it.
std::string fact_text(const plan::Plan& plan, const std::string& name, const SummaryWords& w) {
  const check::Fact* f = plan.facts.find(name);
  if (!f || f->value.is_none()) return w.unknown;
  std::string v = f->value.is_str() ? f->value.as_str() : f->value.repr();
  if (std::find(plan.assumed_facts.begin(), plan.assumed_facts.end(), name) != plan.assumed_facts.end())
    v += fmt::format(" ({})", w.assumed);
  return v;
}

// The fused operator; a chain of more than two (the MoE experts' routing,
// grouped matmul, activation and finalize) by its first, to keep one line.
std::string operator_text(const Candidate& c, const SummaryWords& w) {
  if (c.apis.empty()) return w.no_operator;
  if (c.apis.size() <= 2) return join(c.apis, " + ");
  return fmt::format(fmt::runtime(w.more_operators), c.apis.front(), c.apis.size() - 1, c.apis.size());
}

// Why a not_applicable candidate's chain cannot use the operator: the first
// hard constraint it violates, in the reader's language, else what the
// analysis cited.
std::string blocked_reason(const Candidate& c, Lang lang) {
  for (const plan::CheckResult& r : c.checks)
    if (r.answer == check::Answer::Violated && r.severity == "error") {
      const std::string& message = lang == Lang::Zh && !r.message_zh.empty() ? r.message_zh : r.message_en;
      return fmt::format("{}: {}", r.api, message);
    }
  if (!c.blocking.empty()) return c.blocking.front();
  if (!c.near_miss_reasons.empty()) return c.near_miss_reasons.front();
  return "";
}

class Summary {
 public:
  Summary(const plan::Plan& plan, Lang lang, const std::vector<ReportFile>& reports)
      : plan_(plan), lang_(lang), w_(lang == Lang::Zh ? kZh : kEn), reports_(reports) {}

  std::string render() {
    header();
    candidates();
    facts();
    blocked();
    report_files();
    return out_;
  }

 private:
  void line(const std::string& s = "") { out_ += s + "\n"; }

  void header() {
    std::string files = join(plan_.options.paths.empty() ? plan_.files : plan_.options.paths, " ");
    if (plan_.candidates.empty()) {
      line(fmt::format(fmt::runtime(w_.no_candidates), files));
    } else {
      line(fmt::format(fmt::runtime(plan_.candidates.size() == 1 ? w_.header_one : w_.header), plan_.candidates.size(),
                       files));
      std::map<Status, int> counts;
      for (const Candidate& c : plan_.candidates) ++counts[c.status];
      std::vector<std::string> parts;
      for (const auto& [status, n] : counts) parts.push_back(fmt::format("{} {}", n, status_label(status, lang_)));
      line("  " + join(parts, w_.list_sep));
    }
    std::vector<std::string> deployment;
    for (const char* name : {"chip", "tp", "ep", "dp", "quant"})
      deployment.push_back(fmt::format("{} {}", name, fact_text(plan_, name, w_)));
    deployment.push_back(fmt::format("{} {}", w_.stage, stage_label(plan_.options.stage, lang_)));
    line(w_.deployment + join(deployment, w_.list_sep));
  }

  void candidates() {
    if (plan_.candidates.empty()) return;
    line();
    line(w_.candidates);
    size_t module_w = 0, op_w = 0, status_w = 0;
    for (const Candidate& c : plan_.candidates) {
      module_w = std::max(module_w, display_width(module_title(c.module, lang_)));
      op_w = std::max(op_w, display_width(operator_text(c, w_)));
      status_w = std::max(status_w, display_width(status_label(c.status, lang_)));
    }
    for (const Candidate& c : plan_.candidates) {
      std::string alternatives = c.alternatives.empty()       ? ""
                                 : c.alternatives.size() == 1 ? w_.alternative_one
                                                              : fmt::format(fmt::runtime(w_.alternatives), c.alternatives.size());
      line(fmt::format("  {}  {}  {}  {}{}", pad(module_title(c.module, lang_), module_w), pad(operator_text(c, w_), op_w),
                       pad(status_label(c.status, lang_), status_w), c.id, alternatives));
    }
  }

  static std::string pad(const std::string& s, size_t width) {
    size_t columns = display_width(s);
    return columns >= width ? s : s + std::string(width - columns, ' ');
  }

  void facts() {
    line();
    // Every fact some check asks for, and every fact a matched rule's
    // RULE["when"] waits on.
    std::set<std::string> asked(plan_.unknown_facts.begin(), plan_.unknown_facts.end());
    std::map<std::string, std::vector<std::string>> waiting;  // fact -> rules
    for (const auto& [rule, facts] : plan_.rules_awaiting_facts)
      for (const std::string& f : facts) {
        asked.insert(f);
        waiting[f].push_back(rule);
      }
    if (asked.empty()) {
      line(w_.facts_none);
      return;
    }
    line(w_.facts);
    // Grouped by how they are given: one line per flag, then the --deploy lines.
    std::vector<std::string> usages;
    std::map<std::string, std::vector<std::string>> by_usage;
    std::vector<std::string> deploy_only;
    for (const std::string& fact : asked) {
      plan::FactFlag flag = plan::fact_flag(fact);
      if (flag.flag.empty()) {
        deploy_only.push_back(fact);
        continue;
      }
      if (!by_usage.count(flag.usage)) usages.push_back(flag.usage);
      by_usage[flag.usage].push_back(fact);
    }
    size_t label_w = display_width(w_.deploy_lines);
    for (const std::string& u : usages) label_w = std::max(label_w, display_width(u));
    for (const std::string& usage : usages) {
      std::set<std::string> rules;
      for (const std::string& fact : by_usage[usage])
        for (const std::string& r : waiting[fact]) rules.insert(r);
      line(fmt::format("  {}  {}{}", pad(usage, label_w), join(by_usage[usage], ", "), waiting_text(rules)));
    }
    if (!deploy_only.empty()) {
      std::vector<std::string> lines;
      std::set<std::string> rules;
      for (const std::string& fact : deploy_only) {
        lines.push_back(fact + " = …");
        for (const std::string& r : waiting[fact]) rules.insert(r);
      }
      line(fmt::format("  {}  {}{}", pad(w_.deploy_lines, label_w), join(lines, ", "), waiting_text(rules)));
    }
  }

  std::string waiting_text(const std::set<std::string>& rules) const {
    if (rules.empty()) return "";
    std::vector<std::string> names(rules.begin(), rules.end());
    std::string more;
    if (names.size() > 2) {
      more = fmt::format(fmt::runtime(w_.more), names.size() - 2);
      names.resize(2);
    }
    return fmt::format(fmt::runtime(w_.waiting), rules.size(), join(names, ", ") + more);
  }

  void blocked() {
    // Reference-chain steps each blocked candidate leaves blocked.
    std::map<std::string, std::vector<std::string>> steps_of;
    for (const plan::ChainReport& chain : plan_.reference_chains)
      for (const plan::ChainStepReport& step : chain.steps) {
        if (step.status != "blocked") continue;
        const std::string& chain_title = lang_ == Lang::Zh && !chain.title_zh.empty() ? chain.title_zh : chain.title_en;
        const std::string& step_title = lang_ == Lang::Zh && !step.title_zh.empty() ? step.title_zh : step.title_en;
        for (const std::string& id : step.candidates)
          steps_of[id].push_back(
              fmt::format(fmt::runtime(w_.blocks_step), chain_title, stage_label(chain.stage, lang_), step_title));
      }
    std::vector<const Candidate*> blocked;
    for (const Candidate& c : plan_.candidates)
      if (c.status == Status::NotApplicable) blocked.push_back(&c);
    if (blocked.empty()) return;
    line();
    line(w_.blocked);
    for (const Candidate* c : blocked) {
      line("  " + c->id);
      std::string reason = blocked_reason(*c, lang_);
      if (!reason.empty()) line("      " + cut_line(reason, 150));
      for (const std::string& s : steps_of[c->id]) line("      " + cut_line(s, 150));
    }
  }

  void report_files() {
    if (reports_.empty()) return;
    line();
    line(w_.reports);
    std::string json;
    size_t label_w = 0;
    for (const char* label : {w_.markdown, w_.html, w_.json}) label_w = std::max(label_w, display_width(label));
    for (const ReportFile& r : reports_) {
      const char* label = r.kind == ReportFile::Kind::Markdown ? w_.markdown
                          : r.kind == ReportFile::Kind::Html   ? w_.html
                                                               : w_.json;
      if (r.kind == ReportFile::Kind::Json) json = r.path;
      line(fmt::format("  {}  {}", pad(label, label_w), r.path));
    }
    if (!json.empty() && !plan_.candidates.empty()) line(fmt::format(fmt::runtime(w_.next), json));
  }

  const plan::Plan& plan_;
  Lang lang_;
  const SummaryWords& w_;
  const std::vector<ReportFile>& reports_;
  std::string out_;
};

}  // namespace

std::string plan_summary(const plan::Plan& plan, Lang lang, const std::vector<ReportFile>& reports) {
  return Summary(plan, lang, reports).render();
}

}  // namespace npufuse::report
