// JSON of `rules list` and `rules show`. Key order is fixed so that output
// diffs stay readable; docs/cli.md describes each key.
#include "rules/rule_render.h"

namespace npufuse::rules {

using nlohmann::ordered_json;

namespace {

ordered_json doc_json(const std::string& summary, const std::vector<DocSection>& sections) {
  ordered_json out{{"summary", summary}, {"sections", ordered_json::array()}};
  for (const auto& s : sections) out["sections"].push_back({{"heading", s.heading}, {"body", s.body}});
  return out;
}

ordered_json function_json(const Rule& rule, const frontend::ast::FunctionDef* fn, bool with_source) {
  ordered_json out{{"name", std::string(fn->name)}, {"line", fn->lineno}};
  if (with_source) out["source"] = std::string(rule.file->text_of(fn));
  return out;
}

ordered_json literal_or(const Rule& rule, const char* key, ordered_json fallback) {
  auto it = rule.literal.find(key);
  return it == rule.literal.end() ? fallback : *it;
}

}  // namespace

ordered_json list_json(const std::vector<const Rule*>& rules, const std::string& source) {
  ordered_json out{{"source", source}, {"rules", ordered_json::array()}};
  for (const Rule* r : rules)
    out["rules"].push_back({{"id", r->id},
                            {"module", r->module},
                            {"safety", r->safety},
                            {"apis", r->apis},
                            {"stages", r->stages},
                            {"title", r->title}});
  return out;
}

ordered_json show_json(const Rule& rule, const std::string& source) {
  ordered_json prerequisites = ordered_json::array();
  for (const auto& p : rule.prerequisites)
  {
    ordered_json one = {{"id", p.id}, {"en", p.en}, {"zh", p.zh}, {"mechanical", p.mechanical}};
    if (!p.seam.empty()) one["seam"] = p.seam;
    prerequisites.push_back(std::move(one));
  }
  ordered_json rejects = ordered_json::array();
  for (const auto& r : rule.rejects) {
    ordered_json one = {{"api", r.api}, {"en", r.en}, {"zh", r.zh}, {"needs", r.needs}};
    if (!r.spares.empty()) one["spares"] = r.spares;
    rejects.push_back(std::move(one));
  }
  ordered_json near_misses = ordered_json::array();
  for (const auto& n : rule.near_misses) near_misses.push_back({{"file", n.file}, {"reason", n.reason}});
  ordered_json searches = ordered_json::array();
  for (const auto* fn : rule.searches) searches.push_back(function_json(rule, fn, false));
  ordered_json naives = ordered_json::array();
  for (const auto* fn : rule.naives) naives.push_back(function_json(rule, fn, false));
  ordered_json lookalikes = ordered_json::array();
  for (const auto* fn : rule.lookalikes) lookalikes.push_back(function_json(rule, fn, false));

  ordered_json numeric = ordered_json::object();
  for (const char* key : {"inputs", "sizes", "dtypes", "tolerance", "min_torch", "deinterleaved_returns", "absorbed_returns"})
    if (rule.literal.contains(key)) numeric[key] = rule.literal[key];

  return ordered_json{
      {"source", source},
      {"id", rule.id},
      {"family", rule.family},
      {"path", rule.path},
      {"title", rule.title},
      {"module", rule.module},
      {"safety", rule.safety},
      {"apis", rule.apis},
      {"stages", rule.stages},
      {"prerequisites", prerequisites},
      {"checks", rule.checks},
      {"facts", literal_or(rule, "facts", ordered_json::object())},
      {"when", rule.when.empty() ? ordered_json(nullptr) : ordered_json(rule.when)},
      {"operand_facts", literal_or(rule, "operand_facts", ordered_json::object())},
      {"rejects", rejects},
      {"hints", {{"class_names", rule.hint_class_names}, {"hub_kernels", rule.hint_hub_kernels}}},
      {"near_misses", near_misses},
      {"match", literal_or(rule, "match", ordered_json::object())},
      {"numeric_check", numeric},
      {"doc", {{"en", doc_json(rule.summary_en, rule.doc_en)}, {"zh", doc_json(rule.summary_zh, rule.doc_zh)}}},
      {"functions",
       {{"search", searches},
        {"replace", rule.replace ? function_json(rule, rule.replace, true) : ordered_json(nullptr)},
        {"naive", naives},
        {"lookalike", lookalikes}}},
  };
}

}  // namespace npufuse::rules
