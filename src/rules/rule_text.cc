// Text of `rules list` and `rules show` for people. Field labels follow
// --lang; rule texts are shown in the language asked for where the rule has
// both (documentation, prerequisites, rejects), as written otherwise.
#include <fmt/format.h>

#include <algorithm>

#include "util/edit_distance.h"
#include "rules/rule_render.h"

namespace npufuse::rules {

namespace {

std::string joined(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

struct Labels {
  const char *file, *module, *safety, *stages, *apis, *checks, *facts, *operand_facts, *when, *hints, *prerequisites, *mechanical,
      *rejects, *needs, *near_misses, *searches, *naives, *lookalikes, *replace, *none, *class_names, *hub_kernels;
};

const Labels& labels(RuleLang lang) {
  static const Labels en{"file", "module", "safety", "stages", "apis", "checks", "facts", "operand facts", "when", "hints",
                         "prerequisites", "mechanical", "rejects", "needs", "near misses", "search alternatives",
                         "rejected mappings (naive)", "look-alikes told as near misses", "replace", "none", "class names", "hub kernels"};
  static const Labels zh{"文件", "模块", "安全性", "阶段", "算子", "检查", "事实", "算子视角的事实", "条件", "提示", "前置改造",
                         "可自动完成", "拒绝的映射", "需要", "近似但不匹配", "search写法", "拒绝的映射（naive）",
                         "作为近似不匹配提示的相似写法", "replace", "无", "类名", "hub内核"};
  return lang == RuleLang::Zh ? zh : en;
}

}  // namespace

std::string render_list_text(const std::vector<const Rule*>& rules, RuleLang lang) {
  size_t id_width = 2, module_width = 6, stages_width = 6, apis_width = 4;
  for (const Rule* r : rules) {
    apis_width = std::max(apis_width, joined(r->apis, ",").size());
    id_width = std::max(id_width, r->id.size());
    module_width = std::max(module_width, r->module.size());
    stages_width = std::max(stages_width, joined(r->stages, ",").size());
  }
  std::string out;
  for (const Rule* r : rules)
    out += fmt::format("{:<{}}  {:<{}}  {:<19}  {:<{}}  {:<{}}  {}\n", r->id, id_width, r->module, module_width,
                       r->safety, joined(r->stages, ","), stages_width, joined(r->apis, ","), apis_width, r->title);
  return out;
}

std::string render_show_text(const Rule& r, RuleLang lang) {
  const Labels& l = labels(lang);
  bool zh = lang == RuleLang::Zh;
  std::string out = fmt::format("{}: {}\n{}\n\n", r.id, r.title, zh ? r.summary_zh : r.summary_en);
  auto field = [&](const char* label, const std::string& value) {
    std::string head = std::string(label) + ":";
    out += fmt::format("{:<15}{}\n", head.size() < 15 ? head : head + " ", value.empty() ? l.none : value);
  };
  field(l.file, r.path);
  field(l.module, r.module);
  field(l.safety, r.safety);
  field(l.stages, joined(r.stages));
  field(l.apis, joined(r.apis));
  field(l.checks, joined(r.checks));
  std::vector<std::string> facts;
  for (const auto& [name, text] : r.facts) facts.push_back(name + " = " + text);
  field(l.facts, joined(facts));
  if (!r.operand_facts.empty()) {
    std::vector<std::string> operand;
    for (const auto& [name, text] : r.operand_facts) operand.push_back(name + " = " + text);
    field(l.operand_facts, joined(operand));
  }
  if (!r.when.empty()) field(l.when, r.when);
  std::vector<std::string> hints;
  if (!r.hint_class_names.empty()) hints.push_back(std::string(l.class_names) + " " + joined(r.hint_class_names));
  if (!r.hint_hub_kernels.empty()) hints.push_back(std::string(l.hub_kernels) + " " + joined(r.hint_hub_kernels));
  field(l.hints, joined(hints, "; "));

  std::vector<std::string> searches, naives, lookalikes;
  for (const auto* fn : r.searches) searches.push_back(fmt::format("{} (:{})", fn->name, fn->lineno));
  for (const auto* fn : r.naives) naives.push_back(fmt::format("{} (:{})", fn->name, fn->lineno));
  for (const auto* fn : r.lookalikes) lookalikes.push_back(fmt::format("{} (:{})", fn->name, fn->lineno));
  field(l.searches, joined(searches));
  if (!naives.empty()) field(l.naives, joined(naives));
  if (!lookalikes.empty()) field(l.lookalikes, joined(lookalikes));

  if (!r.prerequisites.empty()) {
    out += fmt::format("\n{}:\n", l.prerequisites);
    for (const auto& p : r.prerequisites)
      out += fmt::format("  - {}{}: {}\n", p.id, p.mechanical ? fmt::format(" ({})", l.mechanical) : "", zh ? p.zh : p.en);
  }
  if (!r.rejects.empty()) {
    out += fmt::format("\n{}:\n", l.rejects);
    for (const auto& rej : r.rejects) {
      out += fmt::format("  - {}: {}\n", rej.api, zh ? rej.zh : rej.en);
      if (!rej.needs.empty()) out += fmt::format("    {}: {}\n", l.needs, rej.needs);
    }
  }
  if (!r.near_misses.empty()) {
    out += fmt::format("\n{}:\n", l.near_misses);
    for (const auto& n : r.near_misses) out += fmt::format("  - {}: {}\n", n.file, n.reason);
  }
  for (const auto& s : zh ? r.doc_zh : r.doc_en) {
    out += "\n" + s.heading + "\n";
    size_t start = 0;
    while (start <= s.body.size()) {
      size_t nl = s.body.find('\n', start);
      std::string line = s.body.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
      out += line.empty() ? "\n" : "    " + line + "\n";
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
  }
  if (r.replace) {
    out += fmt::format("\n{} ({}:{}):\n", l.replace, r.path, r.replace->lineno);
    out += std::string(r.file->text_of(r.replace)) + "\n";
  }
  return out;
}

std::vector<std::string> similar_rule_ids(const std::vector<Rule>& rules, std::string_view wanted, size_t max) {
  struct Scored {
    size_t score;
    const std::string* id;
  };
  std::vector<Scored> scored;
  for (const Rule& r : rules) {
    std::string_view id = r.id;
    std::string_view stem = id.substr(id.find('.') + 1);
    size_t distance = std::min(edit_distance(wanted, id), edit_distance(wanted, stem));
    bool contained = !wanted.empty() && (id.find(wanted) != std::string_view::npos || wanted.find(stem) != std::string_view::npos);
    if (contained) distance = std::min<size_t>(distance, 1);
    if (distance <= std::max<size_t>(2, wanted.size() / 4)) scored.push_back({distance, &r.id});
  }
  std::stable_sort(scored.begin(), scored.end(), [](const Scored& a, const Scored& b) { return a.score < b.score; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < max; ++i) out.push_back(*scored[i].id);
  return out;
}

}  // namespace npufuse::rules
