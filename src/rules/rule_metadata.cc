// RULE keys and their types (rules/README.md, "RULE keys"). The literal is
// converted to JSON once; the checks below walk the JSON and the AST side by
// side so that each message points at the offending key or element.
#include "rules/rule_metadata.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <set>

#include "check/expr_parser.h"
#include "rules/python_literal.h"

namespace npufuse::rules {

namespace ast = frontend::ast;
using nlohmann::ordered_json;

const std::vector<std::string>& rule_modules() {
  static const std::vector<std::string> v{"attention", "kv_cache", "rope",     "norm", "ffn",   "moe_gate",
                                          "moe_routing", "moe_experts", "mla", "indexer", "quant", "other"};
  return v;
}
const std::vector<std::string>& rule_safeties() {
  static const std::vector<std::string> v{"safe", "needs_prerequisites", "display_only"};
  return v;
}
const std::vector<std::string>& rule_stages() {
  static const std::vector<std::string> v{"prefill", "decode"};
  return v;
}

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string one_of(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// A value of the literal with the AST node it came from.
struct Field {
  const ast::expr* node;
  const ordered_json& value;
};

class MetadataReader {
 public:
  MetadataReader(const model::ModelFile& file, LoadErrors& errors) : file_(file), errors_(errors) {}

  void error(const ast::Node* at, const std::string& message) { errors_.at(file_, at, message); }

  bool is_type(const Field& f, ordered_json::value_t want, const char* want_name, const std::string& what) {
    bool ok = f.value.type() == want ||
              (want == ordered_json::value_t::number_float && f.value.is_number()) ||
              (want == ordered_json::value_t::number_integer && f.value.is_number_unsigned());
    if (!ok) error(f.node, what + ": expected " + want_name + ", got " + literal_kind(f.node));
    return ok;
  }
  bool is_str(const Field& f, const std::string& what) { return is_type(f, ordered_json::value_t::string, "a str", what); }
  bool is_list(const Field& f, const std::string& what) { return is_type(f, ordered_json::value_t::array, "a list", what); }
  bool is_dict(const Field& f, const std::string& what) { return is_type(f, ordered_json::value_t::object, "a dict", what); }

  // The elements of a list literal (or tuple), each with its node.
  std::vector<Field> elements(const Field& f) {
    std::vector<Field> out;
    frontend::Span<ast::expr*> elts;
    if (const auto* l = ast::as<ast::List>(f.node)) elts = l->elts;
    else if (const auto* t = ast::as<ast::Tuple>(f.node)) elts = t->elts;
    for (size_t i = 0; i < elts.size && i < f.value.size(); ++i) out.push_back({elts[i], f.value[i]});
    return out;
  }

  // The entries of a dict literal: key node, name, value field.
  struct Entry {
    const ast::expr* key;
    std::string name;
    Field field;
  };
  std::vector<Entry> entries(const Field& f) {
    std::vector<Entry> out;
    const auto* d = ast::as<ast::Dict>(f.node);
    if (!d) return out;
    for (size_t i = 0; i < d->keys.size; ++i) {
      const auto* k = ast::as<ast::Constant>(d->keys[i]);
      if (!k || k->value.kind != ast::ConstantKind::Str) continue;
      std::string name = ast::constant_string(k->value);
      if (f.value.contains(name)) out.push_back({k, name, {d->values[i], f.value[name]}});
    }
    return out;
  }

  std::vector<std::string> str_list(const Field& f, const std::string& what) {
    std::vector<std::string> out;
    if (!is_list(f, what)) return out;
    for (const Field& e : elements(f))
      if (is_str(e, what + " entry")) out.push_back(e.value.get<std::string>());
    return out;
  }

  // A dict with a fixed set of str-valued keys (prerequisites, rejects, near
  // misses): unknown keys and missing required ones are errors.
  std::map<std::string, Field> record(const Field& f, const std::string& what, const std::vector<std::string>& required,
                                      const std::vector<std::string>& optional) {
    std::map<std::string, Field> out;
    if (!is_dict(f, what)) return out;
    for (const Entry& e : entries(f)) {
      if (!contains(required, e.name) && !contains(optional, e.name)) {
        error(e.key, what + ": unknown key '" + e.name + "' (allowed: " + one_of(required) +
                         (optional.empty() ? "" : ", " + one_of(optional)) + ")");
        continue;
      }
      out.emplace(e.name, e.field);
    }
    for (const auto& key : required)
      if (!out.count(key)) error(f.node, what + ": missing '" + key + "'");
    return out;
  }

  std::string str_of(const std::map<std::string, Field>& rec, const std::string& key, const std::string& what) {
    auto it = rec.find(key);
    if (it == rec.end() || !is_str(it->second, what + " '" + key + "'")) return {};
    return it->second.value.get<std::string>();
  }

  std::string text_of(const ast::Node* n) const { return std::string(file_.text_of(n)); }

 private:
  const model::ModelFile& file_;
  LoadErrors& errors_;
};

using KeyReader = std::function<void(MetadataReader&, const Field&, Rule&)>;

void read_prerequisites(MetadataReader& r, const Field& f, Rule& rule) {
  if (!r.is_list(f, "prerequisites")) return;
  for (const Field& e : r.elements(f)) {
    auto rec = r.record(e, "prerequisite", {"id", "en", "zh"}, {"mechanical", "seam"});
    if (rec.empty()) continue;
    Prerequisite p{r.str_of(rec, "id", "prerequisite"), r.str_of(rec, "en", "prerequisite"),
                   r.str_of(rec, "zh", "prerequisite")};
    if (auto it = rec.find("mechanical"); it != rec.end())
      if (r.is_type(it->second, ordered_json::value_t::boolean, "a bool", "prerequisite 'mechanical'"))
        p.mechanical = it->second.value.get<bool>();
    if (rec.count("seam")) {
      p.seam = r.str_of(rec, "seam", "prerequisite");
      static const std::set<std::string> kinds = {"within_layer", "across_layers", "into_next_layer", "into_final_norm"};
      if (!kinds.count(p.seam))
        r.error(rec.at("seam").node, fmt::format("prerequisite 'seam' must be within_layer, across_layers, into_next_layer or "
                                               "into_final_norm, not \"{}\"", p.seam));
    }
    rule.prerequisites.push_back(std::move(p));
  }
}

void read_rejects(MetadataReader& r, const Field& f, Rule& rule) {
  if (!r.is_list(f, "rejects")) return;
  for (const Field& e : r.elements(f)) {
    auto rec = r.record(e, "reject", {"api", "en", "zh"}, {"needs", "spares"});
    if (rec.empty()) continue;
    rule.rejects.push_back({r.str_of(rec, "api", "reject"), r.str_of(rec, "en", "reject"), r.str_of(rec, "zh", "reject"),
                            rec.count("needs") ? r.str_of(rec, "needs", "reject") : "",
                            rec.count("spares") ? r.str_list(rec.at("spares"), "reject 'spares'") : std::vector<std::string>{},
                            e.node ? e.node->lineno : 1, e.node ? e.node->col_offset + 1 : 1});
  }
}

void read_near_misses(MetadataReader& r, const Field& f, Rule& rule) {
  if (!r.is_list(f, "near_misses")) return;
  for (const Field& e : r.elements(f)) {
    auto rec = r.record(e, "near miss", {"file", "reason"}, {});
    if (rec.empty()) continue;
    rule.near_misses.push_back({r.str_of(rec, "file", "near miss"), r.str_of(rec, "reason", "near miss")});
  }
}

void read_checks(MetadataReader& r, const Field& f, Rule& rule) {
  if (!r.is_list(f, "checks")) return;
  for (const Field& e : r.elements(f)) {
    if (!r.is_str(e, "checks entry")) continue;
    std::string check = e.value.get<std::string>();
    size_t colon = check.find(':');
    if (colon == 0 || colon == std::string::npos || colon + 1 == check.size())
      r.error(e.node, "check '" + check + "' is not 'api:*' or 'api:constraint_id'");
    rule.checks.push_back(std::move(check));
  }
}

void read_stages(MetadataReader& r, const Field& f, Rule& rule) {
  rule.stages = r.str_list(f, "stages");
  for (const Field& e : r.elements(f))
    if (e.value.is_string() && !contains(rule_stages(), e.value.get<std::string>()))
      r.error(e.node, "stage '" + e.value.get<std::string>() + "' is not one of " + one_of(rule_stages()));
  if (f.value.is_array() && f.value.empty()) r.error(f.node, "stages: name at least one of " + one_of(rule_stages()));
}

void read_facts(MetadataReader& r, const Field& f, Rule& rule) {
  if (!r.is_dict(f, "facts")) return;
  for (const auto& e : r.entries(f)) {
    if (e.field.value.is_structured() || e.field.value.is_null()) {
      r.error(e.field.node, "fact '" + e.name + "': expected a str, number or bool, got " + literal_kind(e.field.node));
      continue;
    }
    rule.facts[e.name] = r.text_of(e.field.node);
  }
}

// Each value is an expression in the constraint language, checked here so a
// typo is named with its place instead of turning into an unknown fact.
void read_operand_facts(MetadataReader& r, const Field& f, Rule& rule) {
  if (!r.is_dict(f, "operand_facts")) return;
  for (const auto& e : r.entries(f)) {
    if (!r.is_str(e.field, "operand fact '" + e.name + "'")) continue;
    std::string text = e.field.value.get<std::string>();
    try {
      check::parse_constraint_expression(text);
    } catch (const check::ExprSyntaxError& err) {
      r.error(e.field.node, fmt::format("operand fact '{}': column {} of the expression: {}", e.name, err.col(), err.what()));
      continue;
    }
    rule.operand_facts[e.name] = std::move(text);
  }
}

void read_hints(MetadataReader& r, const Field& f, Rule& rule) {
  auto rec = r.record(f, "hints", {}, {"class_names", "hub_kernels"});
  if (auto it = rec.find("class_names"); it != rec.end()) rule.hint_class_names = r.str_list(it->second, "hints 'class_names'");
  if (auto it = rec.find("hub_kernels"); it != rec.end()) rule.hint_hub_kernels = r.str_list(it->second, "hints 'hub_kernels'");
}

void read_apply(MetadataReader& r, const Field& f, Rule& rule) {
  auto rec = r.record(f, "apply", {}, {"built_once", "init_bindings", "decorators"});
  if (auto it = rec.find("built_once"); it != rec.end()) rule.built_once = r.str_list(it->second, "apply 'built_once'");
  if (auto it = rec.find("init_bindings"); it != rec.end() && r.is_dict(it->second, "apply 'init_bindings'"))
    for (const auto& e : r.entries(it->second)) {
      std::vector<std::string> spellings = r.str_list(e.field, "apply 'init_bindings' '" + e.name + "'");
      if (spellings.empty() && e.field.value.is_array())
        r.error(e.field.node, "apply 'init_bindings' '" + e.name + "': name at least one spelling");
      rule.init_bindings.emplace_back(e.name, std::move(spellings));
    }
  if (auto it = rec.find("decorators"); it != rec.end() && r.is_dict(it->second, "apply 'decorators'"))
    for (const auto& e : r.entries(it->second)) {
      std::string what = "apply 'decorators' '" + e.name + "'";
      auto d = r.record(e.field, what, {"config_keys", "stale_when"}, {});
      Rule::ConfigDecorator decorator{e.name, {}, {}};
      if (auto k = d.find("config_keys"); k != d.end()) decorator.config_keys = r.str_list(k->second, what + " 'config_keys'");
      if (auto k = d.find("stale_when"); k != d.end()) decorator.stale_when = r.str_list(k->second, what + " 'stale_when'");
      if ((decorator.config_keys.empty() || decorator.stale_when.empty()) && d.size() == 2)
        r.error(e.field.node, what + ": 'config_keys' and 'stale_when' each need an entry");
      rule.decorators.push_back(std::move(decorator));
    }
}

// {"<position>": {"weight": input name, "head_axis": int}}: returned values the
// operator gives already folded with W_UK (MLA's absorbed query). The position is
// the returned value's flattened index, written as a str since dict keys are.
void read_absorbed_returns(MetadataReader& r, const Field& f, Rule&) {
  if (!r.is_dict(f, "absorbed_returns")) return;
  for (const auto& e : r.entries(f)) {
    std::string what = "absorbed_returns '" + e.name + "'";
    if (e.name.empty() || e.name.size() > 4 || e.name.find_first_not_of("0123456789") != std::string::npos)
      r.error(e.key, what + ": the key is a returned value's position, written as a str of digits (\"0\")");
    auto rec = r.record(e.field, what, {"weight", "head_axis"}, {});
    if (auto it = rec.find("weight"); it != rec.end()) r.is_str(it->second, what + " 'weight'");
    if (auto it = rec.find("head_axis"); it != rec.end())
      r.is_type(it->second, ordered_json::value_t::number_integer, "an int", what + " 'head_axis'");
  }
}

// A dict whose values all have one shape: {name: {...}} or {name: "..."}.
void require_dict_of(MetadataReader& r, const Field& f, const std::string& what, ordered_json::value_t type,
                     const char* type_name) {
  if (!r.is_dict(f, what)) return;
  for (const auto& e : r.entries(f)) r.is_type(e.field, type, type_name, what + " '" + e.name + "'");
}

const std::map<std::string, KeyReader>& key_readers() {
  using V = ordered_json::value_t;
  static const std::map<std::string, KeyReader> readers{
      {"id", [](MetadataReader& r, const Field& f, Rule& rule) { if (r.is_str(f, "id")) rule.id = f.value.get<std::string>(); }},
      {"title", [](MetadataReader& r, const Field& f, Rule& rule) { if (r.is_str(f, "title")) rule.title = f.value.get<std::string>(); }},
      {"module", [](MetadataReader& r, const Field& f, Rule& rule) {
         if (!r.is_str(f, "module")) return;
         rule.module = f.value.get<std::string>();
         if (!contains(rule_modules(), rule.module))
           r.error(f.node, "module '" + rule.module + "' is not one of " + one_of(rule_modules()));
       }},
      {"apis", [](MetadataReader& r, const Field& f, Rule& rule) { rule.apis = r.str_list(f, "apis"); }},
      {"stages", read_stages},
      {"safety", [](MetadataReader& r, const Field& f, Rule& rule) {
         if (!r.is_str(f, "safety")) return;
         rule.safety = f.value.get<std::string>();
         if (!contains(rule_safeties(), rule.safety))
           r.error(f.node, "safety '" + rule.safety + "' is not one of " + one_of(rule_safeties()));
       }},
      {"prerequisites", read_prerequisites},
      {"checks", read_checks},
      {"facts", read_facts},
      {"operand_facts", read_operand_facts},
      {"when", [](MetadataReader& r, const Field& f, Rule& rule) { if (r.is_str(f, "when")) rule.when = f.value.get<std::string>(); }},
      {"rejects", read_rejects},
      {"hints", read_hints},
      {"inputs", [](MetadataReader& r, const Field& f, Rule&) { require_dict_of(r, f, "inputs", V::object, "a dict"); }},
      {"sizes", [](MetadataReader& r, const Field& f, Rule&) { require_dict_of(r, f, "sizes", V::number_integer, "an int"); }},
      {"dtypes", [](MetadataReader& r, const Field& f, Rule&) { r.str_list(f, "dtypes"); }},
      {"tolerance", [](MetadataReader& r, const Field& f, Rule&) { require_dict_of(r, f, "tolerance", V::object, "a dict"); }},
      {"min_torch", [](MetadataReader& r, const Field& f, Rule&) { require_dict_of(r, f, "min_torch", V::string, "a str"); }},
      {"deinterleaved_returns", [](MetadataReader& r, const Field& f, Rule&) {
         if (!r.is_list(f, "deinterleaved_returns")) return;
         for (const Field& e : r.elements(f))
           if (r.is_type(e, V::number_integer, "an int", "deinterleaved_returns entry") && e.value.get<long long>() < 0)
             r.error(e.node, "deinterleaved_returns entry: a returned value's position, 0 or more");
       }},
      {"absorbed_returns", read_absorbed_returns},
      {"near_misses", read_near_misses},
      {"doc_zh", [](MetadataReader& r, const Field& f, Rule&) { r.is_str(f, "doc_zh"); }},
      {"apply", read_apply},
      {"match", [](MetadataReader& r, const Field& f, Rule& rule) {
         if (r.is_dict(f, "match")) rule.match = nlohmann::json::parse(f.value.dump());
       }},
  };
  return readers;
}

const std::vector<std::string>& required_keys() {
  static const std::vector<std::string> v{"id",     "title",  "module", "apis",  "stages", "safety",
                                          "prerequisites", "checks", "facts", "inputs", "sizes", "doc_zh"};
  return v;
}

}  // namespace

void read_rule_metadata(const model::ModelFile& file, const ast::Dict* literal, const std::string& stem, Rule& rule,
                        LoadErrors& errors) {
  // Key by key, so that one bad value does not hide the mistakes in the others.
  for (size_t i = 0; i < literal->keys.size; ++i) {
    const auto* key = ast::as<ast::Constant>(literal->keys[i]);
    if (!key || key->value.kind != ast::ConstantKind::Str) {
      errors.at(file, literal->keys[i] ? literal->keys[i] : literal->values[i], "RULE keys must be strings");
      continue;
    }
    std::string name = ast::constant_string(key->value);
    if (rule.literal.contains(name)) {
      errors.at(file, key, "duplicate RULE key '" + name + "'");
      continue;
    }
    if (auto value = literal_to_json(file, literal->values[i], errors)) rule.literal[name] = std::move(*value);
  }
  MetadataReader reader(file, errors);
  const auto& readers = key_readers();
  std::vector<std::string> known;
  for (const auto& [name, _] : readers) known.push_back(name);
  for (const auto& e : reader.entries({literal, rule.literal})) {
    auto it = readers.find(e.name);
    if (it == readers.end()) {
      reader.error(e.key, "unknown RULE key '" + e.name + "' (known: " + one_of(known) + ")");
      continue;
    }
    it->second(reader, e.field, rule);
  }
  std::set<std::string> written;
  for (const ast::expr* k : literal->keys)
    if (const auto* c = ast::as<ast::Constant>(k); c && c->value.kind == ast::ConstantKind::Str)
      written.insert(ast::constant_string(c->value));
  for (const auto& key : required_keys())
    if (!written.count(key)) reader.error(literal, "RULE lacks '" + key + "'");

  std::string expected_id = rule.family + "." + stem;
  for (const auto& e : reader.entries({literal, rule.literal}))
    if (e.name == "id" && e.field.value.is_string() && rule.id != expected_id)
      reader.error(e.field.node, "id '" + rule.id + "' must be '" + expected_id + "' (<family>.<file stem>)");
  if (rule.safety == "needs_prerequisites" && rule.prerequisites.empty() && rule.literal.contains("prerequisites"))
    reader.error(literal, "safety 'needs_prerequisites' names no prerequisites");
}

}  // namespace npufuse::rules
