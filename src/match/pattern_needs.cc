#include "match/pattern_needs.h"

#include <set>

#include "match/graph_matcher.h"
#include "match/pattern.h"
#include "match/size_expression.h"
#include "match/value_view.h"

namespace npufuse::match {

using model::DataflowOp;
using model::OpClass;

// The model op names a pattern op may pair with: its own, and the other
// spellings graph_matcher.cc accepts for it (equivalent_spelling,
// divides_by_sqrt, repeat_kv_spelling, unit_axes_spelling, swaps_two_axes,
// same_view_op, same_tensor_sequence).
// Listing a name too many only makes the check weaker, never wrong.
std::vector<std::string> pairing_names_of(const std::string& name) {
  std::vector<std::string> out = {name};
  auto add = [&](std::initializer_list<const char*> more) { out.insert(out.end(), more.begin(), more.end()); };
  if (name == "view") add({"reshape", "unsqueeze"});
  else if (name == "reshape") add({"view", "unsqueeze"});
  else if (name == "list") add({"tuple"});
  else if (name == "tuple") add({"list"});
  else if (name == "pow") add({"mul"});
  else if (name == "mul") add({"pow", "div"});
  else if (name == "rsqrt") add({"div", "sqrt"});
  else if (name == "div") add({"rsqrt"});
  else if (name == "sqrt") add({"rsqrt"});
  else if (name == "repeat_interleave") add({"expand"});
  else if (name == "transpose") add({"permute"});
  return out;
}

bool is_pattern_step(const model::FunctionDataflow& g, int v) {
  if (constant_of(g, v) || is_size_expression(g, v)) return false;  // literals and shape metadata are no steps
  const OpClass cls = g.producer_of(v).cls;
  return cls != OpClass::Input && cls != OpClass::Constant;
}

PatternNeeds needs_of(const Pattern& pattern) {
  const model::FunctionDataflow& g = pattern.graph;
  PatternNeeds needs;
  std::vector<int> slot(g.ops.size(), -1);
  for (const DataflowOp& op : g.ops) {
    if (op.cls == OpClass::Input || op.cls == OpClass::Constant) continue;
    slot[static_cast<size_t>(op.id)] = static_cast<int>(needs.pairing_names.size());
    needs.pairing_names.push_back(pairing_names_of(op.name));
  }
  int start = start_op(pattern);
  if (start < 0) return needs;
  std::set<int> seen;
  std::vector<int> todo = {start};
  while (!todo.empty()) {
    int id = todo.back();
    todo.pop_back();
    if (!seen.insert(id).second || slot[static_cast<size_t>(id)] < 0) continue;
    const DataflowOp& op = g.ops[static_cast<size_t>(id)];
    // A skipped optional step leaves only its first input on the path; a
    // branch merge may take any arm. Neither is required, nor what is below.
    if (pattern.options.optional.count(op.name) || op.name == "phi") continue;
    // A step adding an optional input may be missing; the value it adds to
    // is still on the path.
    if (int rest = optional_input_rest(pattern, id); rest >= 0) {
      int v = through_casts(g, rest);
      if (is_pattern_step(g, v)) todo.push_back(g.producer_of(v).id);
      continue;
    }
    needs.required.push_back(static_cast<size_t>(slot[static_cast<size_t>(id)]));
    for (int in : op.inputs) {
      int v = through_casts(g, in);
      if (is_pattern_step(g, v)) todo.push_back(g.producer_of(v).id);
    }
  }
  return needs;
}

namespace {

// `has_partner(i)`: whether pattern op i of pairing_names has a partner.
template <class HasPartner>
bool may_match_or_nearly_by(const PatternNeeds& needs, double near_miss_steps, HasPartner&& has_partner) {
  bool complete = true;
  for (size_t i : needs.required)
    if (!has_partner(i)) {
      complete = false;
      break;
    }
  if (complete) return true;
  if (near_miss_steps < 0) return false;
  double reachable = 0;
  for (size_t i = 0; i < needs.pairing_names.size(); ++i)
    if (has_partner(i)) ++reachable;
  return reachable >= near_miss_steps;
}

}  // namespace

bool may_match_or_nearly(const PatternNeeds& needs, const std::unordered_map<std::string, std::vector<int>>& ops_by_name,
                         double near_miss_steps) {
  return may_match_or_nearly_by(needs, near_miss_steps, [&](size_t i) {
    for (const std::string& n : needs.pairing_names[i])
      if (ops_by_name.count(n)) return true;
    return false;
  });
}

bool may_match_or_nearly(const PatternNeeds& needs, const std::vector<char>& present, double near_miss_steps) {
  return may_match_or_nearly_by(needs, near_miss_steps, [&](size_t i) {
    for (int id : needs.pairing_ids[i])
      if (present[static_cast<size_t>(id)]) return true;
    return false;
  });
}

int NameVocabulary::id(const std::string& name) {
  auto [it, added] = ids.emplace(name, static_cast<int>(names.size()));
  if (added) names.push_back(name);
  return it->second;
}

void share_name_vocabulary(std::vector<Pattern>& patterns) {
  auto vocabulary = std::make_shared<NameVocabulary>();
  for (Pattern& p : patterns) {
    if (!p.needs_known) continue;
    p.needs.pairing_ids.clear();
    for (const std::vector<std::string>& names : p.needs.pairing_names) {
      std::vector<int>& ids = p.needs.pairing_ids.emplace_back();
      for (const std::string& n : names) ids.push_back(vocabulary->id(n));
    }
  }
  for (Pattern& p : patterns)
    if (p.needs_known) p.vocabulary = vocabulary;
}

std::vector<char> names_present(const NameVocabulary& vocabulary,
                                const std::unordered_map<std::string, std::vector<int>>& ops_by_name) {
  std::vector<char> present(vocabulary.names.size(), 0);
  for (const auto& [name, ops] : ops_by_name)
    if (auto it = vocabulary.ids.find(name); it != vocabulary.ids.end()) present[static_cast<size_t>(it->second)] = 1;
  return present;
}

}  // namespace npufuse::match
