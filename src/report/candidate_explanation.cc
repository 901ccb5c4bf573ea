#include "report/candidate_explanation.h"

#include <fmt/format.h>

#include "report/html_candidate_card.h"
#include "report/html_words.h"
#include "report/markdown_text.h"
#include "report/plan_json.h"
#include "report/plan_names.h"

namespace npufuse::report {
namespace {

struct ExplainWords {
  const char* heading;
  const char* alternative_of;
  const char* warnings;
  const char* rule;
  const char* no_rule;
  const char* matched;
  const char* checks;
  const char* no_checks;
  const char* evidence_word;
  const char* missing;
  const char* prerequisites;
  const char* mechanical;
  const char* manual;
  const char* cut;
  const char* fix;
  const char* no_fix;
  const char* replaces;
  const char* requirement;
};

const ExplainWords kEn = {"Explanation of", "alternative of", "Warnings", "Rule", "No rule: this is a chain no torch_npu operator covers.",
                          "Matched lines", "Constraint checks", "No catalog constraint was evaluated.", "evidence",
                          "facts to give", "Prerequisites", "mechanical", "by hand", "Verification cut", "Fix preview",
                          "No fix preview", "replaces", "New-operator requirement"};
const ExplainWords kZh = {"候选说明", "备选方案，所属链路", "警告", "规则", "无规则：没有 torch_npu 算子覆盖此链路。",
                          "匹配的代码行", "约束检查", "没有需要检查的算子目录约束。", "依据", "需提供的事实", "前置条件",
                          "机械改造", "需手工完成", "最小验证切口", "修改预览", "没有修改预览", "替换", "新增融合算子需求"};

std::string explain_pick(const std::string& en, const std::string& zh, Lang lang) {
  return lang == Lang::Zh && !zh.empty() ? zh : en;
}

std::string fence(const std::string& body, const char* lang_tag = "") {
  std::string text = body;
  if (!text.empty() && text.back() != '\n') text += '\n';
  return fmt::format("```{}\n{}```\n", lang_tag, text);
}

void rule_section(std::string& out, const Explanation& e, Lang lang, const ExplainWords& w) {
  out += fmt::format("\n## {}\n\n", w.rule);
  if (!e.rule) {
    out += std::string(e.candidate->rule.empty() ? w.no_rule : "`" + e.candidate->rule + "`") + "\n";
    return;
  }
  const rules::Rule& r = *e.rule;
  out += fmt::format("`{}` — {} ({})\n", r.id, explain_pick(r.summary_en, r.summary_zh, lang), r.path);
  const auto& sections = lang == Lang::Zh && !r.doc_zh.empty() ? r.doc_zh : r.doc_en;
  for (const rules::DocSection& s : sections) {
    if (s.heading.empty()) continue;
    out += fmt::format("\n### {}\n\n{}\n", s.heading, s.body);
  }
}

void checks_section(std::string& out, const plan::Candidate& c, Lang lang, const ExplainWords& w) {
  if (c.status == plan::Status::NoFusedOp) return;
  out += fmt::format("\n## {}\n\n", w.checks);
  if (c.checks.empty()) out += std::string(w.no_checks) + "\n";
  for (const plan::CheckResult& ch : c.checks) {
    std::string stage = ch.stage.empty() ? "" : " (" + stage_label(ch.stage, lang) + ")";
    out += fmt::format("- `{}:{}`{} — **{}** ({}): {}", ch.api, ch.constraint_id, stage, answer_label(ch.answer, lang),
                       ch.severity, one_line(explain_pick(ch.message_en, ch.message_zh, lang)));
    if (!ch.doc.empty()) out += fmt::format(" [{}]", ch.doc);
    out += "\n";
    for (const auto& ev : ch.evidence) out += fmt::format("  - {}: {}\n", w.evidence_word, one_line(ev));
    if (!ch.missing.empty()) out += fmt::format("  - {}: {}\n", w.missing, join(ch.missing, ", "));
  }
}

void fix_section(std::string& out, const Explanation& e, const ExplainWords& w) {
  out += fmt::format("\n## {}\n\n", w.fix);
  if (e.fix.empty()) out += fmt::format("{}.\n", w.no_fix);
  for (const FixHunk& h : e.fix) {
    out += fmt::format("`{}:{}-{}` {}:\n\n", h.file, h.first_line, h.last_line, w.replaces);
    std::string diff;
    auto add_lines = [&diff](const std::string& text, char sign) {
      size_t start = 0;
      while (start < text.size()) {
        size_t nl = text.find('\n', start);
        diff += sign;
        diff += text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
        diff += '\n';
        if (nl == std::string::npos) break;
        start = nl + 1;
      }
    };
    add_lines(h.original, '-');
    add_lines(h.replacement, '+');
    out += fence(diff, "diff") + "\n";
  }
  for (const auto& n : e.fix_notes) out += "- " + one_line(n) + "\n";
}

}  // namespace

std::string explanation_markdown(const Explanation& e, Lang lang) {
  const ExplainWords& w = lang == Lang::Zh ? kZh : kEn;
  const HtmlWords& hw = html_words(lang);
  const plan::Candidate& c = *e.candidate;
  std::string out = fmt::format("# {} `{}`\n\n", w.heading, c.id);
  out += fmt::format("**{}** — {}\n\n", c.title.empty() ? c.id : c.title, status_label(c.status, lang));
  if (!e.preferred_id.empty()) out += fmt::format("({} `{}`)\n\n", w.alternative_of, e.preferred_id);
  if (!e.warnings.empty()) {
    out += fmt::format("> **{}**\n", w.warnings);
    for (const auto& x : e.warnings) out += "> - " + one_line(x) + "\n";
    out += "\n";
  }
  out += fmt::format("- {}: `{}`\n", hw.where, location_label(c.location));
  for (const auto& l : c.extra_locations) out += fmt::format("- {}: `{}`\n", hw.more_places, location_label(l));
  if (!c.instance.empty()) out += fmt::format("- {}: `{}`\n", hw.instance, c.instance);
  std::vector<std::string> stages;
  for (const auto& s : c.stages) stages.push_back(stage_label(s, lang));
  out += fmt::format("- {}: {}\n", hw.stages, join(stages, ", "));
  if (!c.apis.empty()) out += fmt::format("- {}: `{}`\n", hw.apis, join(c.apis, "`, `"));

  rule_section(out, e, lang, w);
  out += fmt::format("\n## {}\n\n", w.matched);
  for (const auto& s : e.snippets) out += fence(s) + "\n";
  if (!c.evidence.empty()) {
    out += fmt::format("{}:\n\n", hw.evidence);
    for (const auto& ev : c.evidence) out += "- " + one_line(ev) + "\n";
  }
  checks_section(out, c, lang, w);
  if (!c.prerequisites.empty()) {
    out += fmt::format("\n## {}\n\n", w.prerequisites);
    for (const auto& p : c.prerequisites) {
      std::string where = p.where.file.empty() ? "" : ", `" + location_label(p.where) + "`";
      out += fmt::format("- `{}` ({}{}): {}\n", p.id, p.mechanical ? w.mechanical : w.manual, where,
                         one_line(explain_pick(p.en, p.zh, lang)));
    }
  }
  if (!c.blocking.empty()) {
    out += fmt::format("\n## {}\n\n", hw.blocking);
    for (const auto& b : c.blocking) out += "- " + one_line(b) + "\n";
  }
  if (!c.near_miss_reasons.empty()) {
    out += fmt::format("\n## {}\n\n", hw.near_miss);
    for (const auto& b : c.near_miss_reasons) out += "- " + one_line(b) + "\n";
  }
  if (c.status == plan::Status::NoFusedOp && !c.requirement.subgraph.empty()) {
    out += fmt::format("\n## {}\n\n- {}: {}\n", w.requirement, hw.subgraph, one_line(c.requirement.subgraph));
    if (!c.requirement.why_nothing_fits.empty())
      out += fmt::format("- {}: {}\n", hw.why_nothing_fits, one_line(c.requirement.why_nothing_fits));
  }
  out += fmt::format("\n## {}\n\n{}\n", w.cut, c.verification_cut.empty() ? "–" : c.verification_cut);
  fix_section(out, e, w);
  return out;
}

nlohmann::json explanation_json(const Explanation& e) {
  // The candidate exactly as the plan writes it, so tools read one layout.
  plan::Plan one;
  one.candidates.push_back(*e.candidate);
  nlohmann::json j;
  j["candidate"] = plan_to_json(one)["candidates"][0];
  if (!e.preferred_id.empty()) j["alternative_of"] = e.preferred_id;
  if (e.rule) {
    nlohmann::json doc = nlohmann::json::object();
    for (const auto& s : e.rule->doc_en) doc[s.heading.empty() ? "summary" : s.heading] = s.body;
    j["rule"] = {{"id", e.rule->id}, {"path", e.rule->path}, {"summary_en", e.rule->summary_en},
                 {"summary_zh", e.rule->summary_zh}, {"doc_en", doc}};
  } else {
    j["rule"] = nullptr;
  }
  j["snippets"] = e.snippets;
  nlohmann::json fix = nlohmann::json::array();
  for (const FixHunk& h : e.fix)
    fix.push_back({{"file", h.file}, {"first_line", h.first_line}, {"last_line", h.last_line}, {"original", h.original},
                   {"replacement", h.replacement}});
  j["fix"] = fix;
  j["fix_notes"] = e.fix_notes;
  j["warnings"] = e.warnings;
  return j;
}

}  // namespace npufuse::report
