#include "report/chain_markdown.h"

#include <fmt/format.h>

namespace npufuse::report {
namespace {

struct ChainWords {
  const char* heading;
  const char* intro;
  const char* source;
  const char* covered, *blocked, *open, *torch, *not_mapped, *not_found;
};

const ChainWords& words(Lang lang) {
  static const ChainWords en{
      "**Reference chains**",
      "The expert chain for each stage and parallel setup that applies to this model (chains/*.toml), step by step.",
      "reference",
      "covered by",
      "blocked",
      "left open",
      "stays a plain torch op",
      "fused in the reference, no rule maps it yet",
      "not found in this model"};
  static const ChainWords zh{
      "**参考链路**",
      "本模型在各阶段与并行方式下适用的专家参考链路（chains/*.toml），逐步列出。",
      "参考文档",
      "覆盖于",
      "被阻断",
      "未覆盖",
      "保留为普通torch算子",
      "参考实现中已融合，尚无规则映射",
      "本模型中未找到"};
  return lang == Lang::Zh ? zh : en;
}

}  // namespace

std::string chain_status_label(const std::string& status, Lang lang) {
  const ChainWords& w = words(lang);
  if (status == "covered") return w.covered;
  if (status == "blocked") return w.blocked;
  if (status == "open") return w.open;
  if (status == "torch") return w.torch;
  if (status == "not_mapped") return w.not_mapped;
  return w.not_found;
}

std::string reference_chains_heading(Lang lang) {
  std::string h = words(lang).heading;
  return h.substr(2, h.size() - 4);  // without the Markdown bold
}

std::string reference_chains_intro(Lang lang) { return words(lang).intro; }

namespace {

std::string ids(const std::vector<std::string>& list) {
  std::string out;
  for (const std::string& id : list) out += fmt::format("{}`{}`", out.empty() ? "" : ", ", id);
  return out;
}

}  // namespace

std::string reference_chains_markdown(const plan::Plan& plan, Lang lang) {
  if (plan.reference_chains.empty()) return "";
  const ChainWords& w = words(lang);
  const bool zh = lang == Lang::Zh;
  std::string out = fmt::format("\n{}\n\n{}\n\n", w.heading, w.intro);
  for (const plan::ChainReport& c : plan.reference_chains) {
    out += fmt::format("- `{}` ({}) — {} ({}: {})\n", c.id, stage_label(c.stage, lang), zh ? c.title_zh : c.title_en,
                       w.source, c.source);
    for (const plan::ChainStepReport& s : c.steps) {
      std::string state = chain_status_label(s.status, lang);
      if (s.status == "covered") state += " " + ids(s.candidates);
      else if (!s.candidates.empty()) state += ": " + ids(s.candidates);
      std::string detail = zh && !s.detail_zh.empty() ? s.detail_zh : s.detail;
      out += fmt::format("  - {} ({}): {}{}\n", s.name, zh ? s.title_zh : s.title_en, state,
                         detail.empty() ? "" : fmt::format(" — {}", detail));
    }
  }
  return out;
}

}  // namespace npufuse::report
