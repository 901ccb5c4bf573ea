// JSON -> plan::Plan, for commands that act on a plan written earlier. Every
// required field is checked for its type; an error names the JSON path so a
// hand-edited plan can be fixed at the right place.
#include <fmt/format.h>

#include "report/plan_json.h"
#include "report/plan_names.h"

namespace npufuse::report {

using nlohmann::json;

namespace {

// A JSON object being read, with the path that leads to it.
class Node {
 public:
  Node(const json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j_.is_object()) fail("expected an object");
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw PlanFormatError(fmt::format("{}: {}", path_.empty() ? "(plan)" : path_, what));
  }
  std::string at(const char* key) const { return path_.empty() ? key : path_ + "." + key; }
  bool has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }

  const json& field(const char* key, json::value_t type, bool required) const {
    static const json kNull;
    if (!has(key)) {
      if (required) throw PlanFormatError(fmt::format("{}: missing", at(key)));
      return kNull;
    }
    const json& v = j_.at(key);
    bool ok = v.type() == type || (type == json::value_t::number_integer && v.is_number_unsigned()) ||
              (type == json::value_t::number_float && v.is_number());
    if (!ok) throw PlanFormatError(fmt::format("{}: expected {}, found {}", at(key), json(type).type_name(), v.type_name()));
    return v;
  }

  std::string str(const char* key, bool required = true) const {
    const json& v = field(key, json::value_t::string, required);
    return v.is_null() ? std::string() : v.get<std::string>();
  }
  int integer(const char* key, bool required = true) const {
    const json& v = field(key, json::value_t::number_integer, required);
    return v.is_null() ? 0 : v.get<int>();
  }
  double number(const char* key, double fallback) const {
    const json& v = field(key, json::value_t::number_float, false);
    return v.is_null() ? fallback : v.get<double>();
  }
  bool boolean(const char* key) const {
    const json& v = field(key, json::value_t::boolean, false);
    return !v.is_null() && v.get<bool>();
  }
  std::vector<std::string> strings(const char* key, bool required = false) const {
    const json& v = field(key, json::value_t::array, required);
    std::vector<std::string> out;
    if (v.is_null()) return out;
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) throw PlanFormatError(fmt::format("{}[{}]: expected string", at(key), i));
      out.push_back(v[i].get<std::string>());
    }
    return out;
  }
  // Each element of an array of objects, with its indexed path.
  template <typename Fn>
  void each(const char* key, bool required, Fn&& fn) const {
    const json& v = field(key, json::value_t::array, required);
    if (v.is_null()) return;
    for (size_t i = 0; i < v.size(); ++i) fn(Node(v[i], fmt::format("{}[{}]", at(key), i)));
  }
  Node child(const char* key) const { return Node(field(key, json::value_t::object, true), at(key)); }
  const json& raw() const { return j_; }
  const std::string& path() const { return path_; }

 private:
  const json& j_;
  std::string path_;
};

check::Value value_from(const json& v) {
  if (v.is_null()) return {};
  if (v.is_boolean()) return check::Value(v.get<bool>());
  if (v.is_number_integer()) return check::Value(v.get<int64_t>());
  if (v.is_number()) return check::Value(v.get<double>());
  if (v.is_string()) return check::Value(v.get<std::string>());
  if (v.is_array()) {
    check::Value::List list;
    for (const auto& e : v) list.push_back(value_from(e));
    return check::Value(std::move(list));
  }
  throw PlanFormatError("fact value: objects are not fact values");
}

plan::Location location_from(const Node& n) {
  return {n.str("file"), n.integer("start_line"), n.integer("end_line")};
}

plan::AnalyzeOptions options_from(const Node& n) {
  plan::AnalyzeOptions o;
  o.paths = n.strings("paths");
  o.config = n.str("config", false);
  o.deploy = n.str("deploy", false);
  o.chip = n.str("chip", false);
  o.tp = n.integer("tp", false);
  o.ep = n.integer("ep", false);
  o.dp = n.integer("dp", false);
  o.quant = n.str("quant", false);
  if (n.has("stage")) o.stage = n.str("stage");
  o.torch_npu_version = n.str("torch_npu_version", false);
  o.rules_dir = n.str("rules_dir", false);
  o.catalog_dir = n.str("catalog_dir", false);
  return o;
}

plan::CheckResult check_from(const Node& n) {
  plan::CheckResult c;
  c.api = n.str("api");
  c.constraint_id = n.str("constraint_id");
  std::string answer = n.str("answer");
  auto a = answer_from_word(answer);
  if (!a) n.fail(fmt::format("answer '{}' is not holds, violated, unknown or not_applicable", answer));
  c.answer = *a;
  c.severity = n.str("severity", false);
  if (n.has("message")) {
    Node m = n.child("message");
    c.message_en = m.str("en", false);
    c.message_zh = m.str("zh", false);
  }
  c.doc = n.str("doc", false);
  c.evidence = n.strings("evidence");
  c.missing = n.strings("missing");
  c.stage = n.str("stage", false);
  return c;
}

plan::PrerequisiteItem prerequisite_from(const Node& n) {
  plan::PrerequisiteItem p;
  p.id = n.str("id");
  p.en = n.str("en", false);
  p.zh = n.str("zh", false);
  p.mechanical = n.boolean("mechanical");
  if (n.has("location")) p.where = location_from(n.child("location"));
  return p;
}

plan::NewOperatorRequirement requirement_from(const Node& n) {
  plan::NewOperatorRequirement r;
  r.subgraph = n.str("subgraph", false);
  r.inputs = n.strings("inputs");
  r.outputs = n.strings("outputs");
  r.dtype = n.str("dtype", false);
  r.layout = n.str("layout", false);
  r.why_nothing_fits = n.str("why_nothing_fits", false);
  return r;
}

plan::Candidate candidate_from(const Node& n) {
  plan::Candidate c;
  c.id = n.str("id");
  c.module = n.str("module");
  c.rule = n.str("rule", false);
  c.title = n.str("title", false);
  c.title_zh = n.str("title_zh", false);
  c.stages = n.strings("stages", true);
  c.apis = n.strings("apis", true);
  std::string status = n.str("status");
  auto s = status_from_word(status);
  if (!s) n.fail(fmt::format("status '{}' is not one of candidate, candidate_with_prerequisites, not_applicable, no_fused_op", status));
  c.status = *s;
  c.location = location_from(n.child("location"));
  n.each("extra_locations", false, [&](const Node& l) { c.extra_locations.push_back(location_from(l)); });
  n.each("parts", false, [&](const Node& l) { c.parts.push_back(location_from(l)); });
  c.instance = n.str("instance", false);
  c.evidence = n.strings("evidence", true);
  c.escapes = n.strings("escapes");
  n.each("prerequisites", true, [&](const Node& p) { c.prerequisites.push_back(prerequisite_from(p)); });
  n.each("checks", true, [&](const Node& ch) { c.checks.push_back(check_from(ch)); });
  c.blocking = n.strings("blocking");
  c.missing_facts = n.strings("missing_facts");
  c.verification_cut = n.str("verification_cut", false);
  c.near_miss_reasons = n.strings("near_miss_reasons");
  if (n.has("requirement")) c.requirement = requirement_from(n.child("requirement"));
  c.confidence = n.number("confidence", 1.0);
  n.each("alternatives", false, [&](const Node& a) { c.alternatives.push_back(candidate_from(a)); });
  return c;
}

plan::ReviewItem review_from(const Node& n) {
  plan::ReviewItem r;
  r.id = n.str("id");
  if (n.has("title")) {
    Node t = n.child("title");
    r.title_en = t.str("en", false);
    r.title_zh = t.str("zh", false);
  }
  r.passed = n.boolean("passed");
  r.failing = n.strings("failing");
  return r;
}

plan::ChainReport chain_from(const Node& n) {
  plan::ChainReport c;
  c.id = n.str("id");
  Node title = n.child("title");
  c.title_en = title.str("en", false);
  c.title_zh = title.str("zh", false);
  c.stage = n.str("stage");
  c.source = n.str("source", false);
  n.each("steps", true, [&](const Node& s) {
    plan::ChainStepReport step;
    step.name = s.str("name");
    Node t = s.child("title");
    step.title_en = t.str("en", false);
    step.title_zh = t.str("zh", false);
    step.status = s.str("status");
    step.candidates = s.strings("candidates");
    if (s.has("detail")) {
      Node d = s.child("detail");
      step.detail = d.str("en", false);
      step.detail_zh = d.str("zh", false);
    }
    c.steps.push_back(std::move(step));
  });
  return c;
}

}  // namespace

plan::Plan plan_from_json(const json& j) {
  Node root(j, "");
  plan::Plan p;
  p.schema_version = root.integer("schema_version");
  if (p.schema_version != kPlanSchemaVersion)
    root.fail(fmt::format("schema_version {} is not {}, the version this npufuse reads", p.schema_version, kPlanSchemaVersion));
  p.tool_version = root.str("tool_version", false);
  root.each("files", true, [&](const Node& f) {
    std::string path = f.str("path");
    p.files.push_back(path);
    if (f.has("sha256")) p.file_hashes[path] = f.str("sha256");
  });
  p.options = options_from(root.child("options"));
  if (root.has("facts")) {
    Node facts = root.child("facts");
    for (const auto& [name, body] : facts.raw().items()) {
      Node fact(body, facts.path() + "." + name);
      if (!body.contains("value")) fact.fail("missing value");
      p.facts.set(name, value_from(body.at("value")), fact.str("provenance", false));
    }
  }
  p.unknown_facts = root.strings("unknown_facts");
  p.assumed_facts = root.strings("assumed_facts");
  root.each("candidates", true, [&](const Node& c) { p.candidates.push_back(candidate_from(c)); });
  root.each("review", true, [&](const Node& r) { p.review.push_back(review_from(r)); });
  root.each("reference_chains", false, [&](const Node& c) { p.reference_chains.push_back(chain_from(c)); });
  p.notes = root.strings("notes");
  return p;
}

}  // namespace npufuse::report
