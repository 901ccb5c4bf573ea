#include "report/plan_sarif.h"

#include <fmt/format.h>

#include <map>

#include "report/markdown_text.h"
#include "report/plan_names.h"

namespace npufuse::report {

using nlohmann::json;

namespace {

const char* level_of(plan::Status s) {
  return s == plan::Status::Candidate || s == plan::Status::CandidateWithPrerequisites ? "warning" : "note";
}

std::string rule_id_of(const plan::Candidate& c) { return c.rule.empty() ? kNoFusedOpRuleId : c.rule; }

std::string doc_markdown(const std::vector<rules::DocSection>& doc) {
  std::string out;
  for (const auto& s : doc) {
    if (!s.heading.empty()) out += "## " + s.heading + "\n\n";
    out += s.body + "\n\n";
  }
  return out;
}

json driver_rule(const std::string& id, const plan::Candidate& first, const RuleLookup& find_rule, Lang lang) {
  json r = {{"id", id}};
  const rules::Rule* rule = find_rule ? find_rule(id) : nullptr;
  if (rule) {
    bool zh = lang == Lang::Zh && !rule->summary_zh.empty();
    r["name"] = rule->title.empty() ? id : rule->title;
    r["shortDescription"] = {{"text", zh ? rule->summary_zh : rule->summary_en}};
    std::string md = doc_markdown(zh && !rule->doc_zh.empty() ? rule->doc_zh : rule->doc_en);
    if (!md.empty()) r["help"] = {{"text", md}, {"markdown", md}};
    r["properties"] = {{"module", rule->module}, {"apis", rule->apis}, {"safety", rule->safety}};
  } else if (id == kNoFusedOpRuleId) {
    r["shortDescription"] = {{"text", lang == Lang::Zh ? "没有现成 torch_npu 融合算子的子链路（新增算子需求）"
                                                       : "A sub-chain no torch_npu fused operator covers (new-operator requirement)"}};
  } else {
    r["shortDescription"] = {{"text", first.title.empty() ? id : first.title}};
  }
  return r;
}

json physical_location(const plan::Location& l) {
  json region = {{"startLine", std::max(1, l.start_line)}};
  if (l.end_line >= l.start_line && l.end_line > 0) region["endLine"] = l.end_line;
  return {{"physicalLocation", {{"artifactLocation", {{"uri", l.file}}}, {"region", region}}}};
}

std::string message_of(const plan::Candidate& c, Lang lang) {
  std::string title = c.title.empty() ? c.id : c.title;
  std::string apis = join(c.apis, ", ");
  bool zh = lang == Lang::Zh;
  switch (c.status) {
    case plan::Status::Candidate:
      return zh ? fmt::format("{}：可替换为 {}", title, apis) : fmt::format("{}: can use {}", title, apis);
    case plan::Status::CandidateWithPrerequisites: {
      std::vector<std::string> ids;
      for (const auto& p : c.prerequisites) ids.push_back(p.id);
      return zh ? fmt::format("{}：完成前置改造（{}）后可替换为 {}", title, join(ids, ", "), apis)
                : fmt::format("{}: can use {} after {}", title, apis, join(ids, ", "));
    }
    case plan::Status::NotApplicable:
      return zh ? fmt::format("{}：不适配 {}（{}）", title, apis, join(c.blocking, "; "))
                : fmt::format("{}: {} does not apply ({})", title, apis, join(c.blocking, "; "));
    case plan::Status::NoFusedOp:
      return zh ? fmt::format("{}：无现成融合算子（{}）", title, c.requirement.subgraph)
                : fmt::format("{}: no fused operator covers this ({})", title, c.requirement.subgraph);
  }
  return title;
}

}  // namespace

json plan_to_sarif(const plan::Plan& plan, const RuleLookup& find_rule, Lang lang) {
  json driver_rules = json::array();
  std::map<std::string, int> rule_index;
  json results = json::array();
  for (const auto& c : plan.candidates) {
    std::string id = rule_id_of(c);
    auto [it, added] = rule_index.emplace(id, static_cast<int>(driver_rules.size()));
    if (added) driver_rules.push_back(driver_rule(id, c, find_rule, lang));
    json result = {{"ruleId", id},
                   {"ruleIndex", it->second},
                   {"level", level_of(c.status)},
                   {"message", {{"text", message_of(c, lang)}}},
                   {"locations", json::array({physical_location(c.location)})},
                   {"partialFingerprints", {{"npufuseCandidateId/v1", c.id}}},
                   {"properties",
                    {{"status", status_word(c.status)}, {"module", c.module}, {"stages", c.stages}, {"apis", c.apis}}}};
    if (!c.alternatives.empty()) {
      // One result per chain: the other rules for it ride along, so a review
      // tool shows one finding with its choices instead of two at one line.
      json alternatives = json::array();
      std::vector<std::string> words;
      for (const auto& a : c.alternatives) {
        alternatives.push_back({{"rule", a.rule}, {"status", status_word(a.status)}, {"apis", a.apis}, {"blocking", a.blocking}});
        words.push_back(fmt::format("{} ({})", a.rule, status_word(a.status)));
      }
      result["properties"]["alternatives"] = std::move(alternatives);
      result["message"]["text"] = message_of(c, lang) + (lang == Lang::Zh ? "；备选：" : "; alternatives: ") + join(words, ", ");
    }
    if (!c.extra_locations.empty()) {
      json related = json::array();
      for (size_t i = 0; i < c.extra_locations.size(); ++i) {
        json loc = physical_location(c.extra_locations[i]);
        loc["id"] = static_cast<int>(i);
        related.push_back(std::move(loc));
      }
      result["relatedLocations"] = std::move(related);
    }
    results.push_back(std::move(result));
  }
  json artifacts = json::array();
  for (const auto& f : plan.files) {
    json a = {{"location", {{"uri", f}}}};
    if (auto h = plan.file_hashes.find(f); h != plan.file_hashes.end()) a["hashes"] = {{"sha-256", h->second}};
    artifacts.push_back(std::move(a));
  }
  json driver = {{"name", "npufuse"}, {"rules", driver_rules}};
  if (!plan.tool_version.empty()) driver["version"] = plan.tool_version;
  return {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
          {"version", "2.1.0"},
          {"runs", json::array({{{"tool", {{"driver", driver}}}, {"artifacts", artifacts}, {"results", results}}})}};
}

}  // namespace npufuse::report
