// plan::Plan -> JSON (docs/analyze-schema.md). Optional parts are left out
// when empty, so a plan reads short; the reader restores the defaults.
#include "report/plan_json.h"
#include "report/plan_names.h"

namespace npufuse::report {

using nlohmann::json;

namespace {

json value_json(const check::Value& v) {
  if (v.is_none()) return nullptr;
  if (v.is_bool()) return v.as_bool();
  if (v.is_int()) return v.as_int();
  if (v.is_float()) return std::get<double>(v.data);
  if (v.is_str()) return v.as_str();
  json list = json::array();
  for (const auto& e : v.as_list()) list.push_back(value_json(e));
  return list;
}

json location_json(const plan::Location& l) {
  return {{"file", l.file}, {"start_line", l.start_line}, {"end_line", l.end_line}};
}

json options_json(const plan::AnalyzeOptions& o) {
  return {{"paths", o.paths},
          {"config", o.config},
          {"deploy", o.deploy},
          {"chip", o.chip},
          {"tp", o.tp},
          {"ep", o.ep},
          {"dp", o.dp},
          {"quant", o.quant},
          {"stage", o.stage},
          {"torch_npu_version", o.torch_npu_version},
          {"rules_dir", o.rules_dir},
          {"catalog_dir", o.catalog_dir}};
}

json check_json(const plan::CheckResult& c) {
  json j = {{"api", c.api},
            {"constraint_id", c.constraint_id},
            {"answer", check::answer_name(c.answer)},
            {"severity", c.severity},
            {"message", {{"en", c.message_en}, {"zh", c.message_zh}}},
            {"doc", c.doc},
            {"evidence", c.evidence}};
  if (!c.missing.empty()) j["missing"] = c.missing;
  if (!c.stage.empty()) j["stage"] = c.stage;
  return j;
}

json prerequisite_json(const plan::PrerequisiteItem& p) {
  json j = {{"id", p.id}, {"en", p.en}, {"zh", p.zh}, {"mechanical", p.mechanical}};
  if (!p.where.file.empty()) j["location"] = location_json(p.where);
  return j;
}

json requirement_json(const plan::NewOperatorRequirement& r) {
  return {{"subgraph", r.subgraph}, {"inputs", r.inputs},   {"outputs", r.outputs},
          {"dtype", r.dtype},       {"layout", r.layout},   {"why_nothing_fits", r.why_nothing_fits}};
}

json candidate_json(const plan::Candidate& c) {
  json j = {{"id", c.id},
            {"module", c.module},
            {"rule", c.rule},
            {"title", c.title},
            {"stages", c.stages},
            {"apis", c.apis},
            {"status", status_word(c.status)},
            {"location", location_json(c.location)},
            {"evidence", c.evidence},
            {"prerequisites", json::array()},
            {"checks", json::array()},
            {"confidence", c.confidence}};
  if (!c.title_zh.empty()) j["title_zh"] = c.title_zh;
  for (const auto& p : c.prerequisites) j["prerequisites"].push_back(prerequisite_json(p));
  for (const auto& ch : c.checks) j["checks"].push_back(check_json(ch));
  if (!c.extra_locations.empty()) {
    json extra = json::array();
    for (const auto& l : c.extra_locations) extra.push_back(location_json(l));
    j["extra_locations"] = std::move(extra);
  }
  if (!c.parts.empty()) {
    json parts = json::array();
    for (const auto& l : c.parts) parts.push_back(location_json(l));
    j["parts"] = std::move(parts);
  }
  if (!c.instance.empty()) j["instance"] = c.instance;
  if (!c.escapes.empty()) j["escapes"] = c.escapes;
  if (!c.blocking.empty()) j["blocking"] = c.blocking;
  if (!c.missing_facts.empty()) j["missing_facts"] = c.missing_facts;
  if (!c.verification_cut.empty()) j["verification_cut"] = c.verification_cut;
  if (!c.near_miss_reasons.empty()) j["near_miss_reasons"] = c.near_miss_reasons;
  if (c.status == plan::Status::NoFusedOp) j["requirement"] = requirement_json(c.requirement);
  if (!c.alternatives.empty()) {
    json alternatives = json::array();
    for (const auto& a : c.alternatives) alternatives.push_back(candidate_json(a));
    j["alternatives"] = std::move(alternatives);
  }
  return j;
}

json chain_json(const plan::ChainReport& c) {
  json steps = json::array();
  for (const plan::ChainStepReport& s : c.steps) {
    json step = {{"name", s.name}, {"title", {{"en", s.title_en}, {"zh", s.title_zh}}}, {"status", s.status},
                 {"candidates", s.candidates}};
    if (!s.detail.empty()) step["detail"] = {{"en", s.detail}, {"zh", s.detail_zh}};
    steps.push_back(std::move(step));
  }
  return {{"id", c.id}, {"title", {{"en", c.title_en}, {"zh", c.title_zh}}}, {"stage", c.stage}, {"source", c.source},
          {"steps", std::move(steps)}};
}

json review_json(const plan::ReviewItem& r) {
  return {{"id", r.id}, {"title", {{"en", r.title_en}, {"zh", r.title_zh}}}, {"passed", r.passed}, {"failing", r.failing}};
}

}  // namespace

json plan_to_json(const plan::Plan& plan) {
  json j;
  j["schema_version"] = plan.schema_version;
  j["tool_version"] = plan.tool_version;
  j["files"] = json::array();
  for (const auto& f : plan.files) {
    json file = {{"path", f}};
    if (auto it = plan.file_hashes.find(f); it != plan.file_hashes.end()) file["sha256"] = it->second;
    j["files"].push_back(std::move(file));
  }
  j["options"] = options_json(plan.options);
  j["facts"] = json::object();
  for (const auto& [name, fact] : plan.facts.all())
    j["facts"][name] = {{"value", value_json(fact.value)}, {"provenance", fact.provenance}};
  j["unknown_facts"] = plan.unknown_facts;
  if (!plan.assumed_facts.empty()) j["assumed_facts"] = plan.assumed_facts;
  j["candidates"] = json::array();
  for (const auto& c : plan.candidates) j["candidates"].push_back(candidate_json(c));
  j["review"] = json::array();
  for (const auto& r : plan.review) j["review"].push_back(review_json(r));
  j["reference_chains"] = json::array();
  for (const auto& c : plan.reference_chains) j["reference_chains"].push_back(chain_json(c));
  j["notes"] = plan.notes;
  return j;
}

}  // namespace npufuse::report
