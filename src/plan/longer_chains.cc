#include "plan/longer_chains.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>

namespace npufuse::plan {
namespace {

using Range = std::tuple<std::string, uint32_t, uint32_t>;

std::set<Range> ops_of(const Candidate& c) {
  std::set<Range> out;
  for (const Candidate::SourceRange& r : c.apply_ops) out.emplace(r.file, r.begin, r.end);
  return out;
}

// `self.layers[].ffn.experts[].w1.weight` (matched through the model's
// forward) and `self.experts[].w1.weight` (in the MoE's own) name one
// value; `self.norm.weight` and `self.layers[].attn_norm.weight` do not.
bool same_value_text(std::string a, std::string b) {
  auto strip = [](std::string& t) {
    if (t.rfind("self.", 0) == 0) t.erase(0, 5);
  };
  strip(a);
  strip(b);
  if (a == b) return true;
  const std::string& shorter = a.size() < b.size() ? a : b;
  const std::string& longer = a.size() < b.size() ? b : a;
  return longer.size() > shorter.size() && longer.compare(longer.size() - shorter.size(), shorter.size(), shorter) == 0 &&
         longer[longer.size() - shorter.size() - 1] == '.';
}

// Shared helpers (one norm class for every norm) put different chains on
// the same source bytes: the parameters both rules bind must name the same
// values.
bool bindings_agree(const Candidate& a, const Candidate& b) {
  for (const auto& [name, text] : a.apply_bindings)
    for (const auto& [other_name, other_text] : b.apply_bindings)
      if (name == other_name && !same_value_text(text, other_text)) return false;
  return true;
}

std::string where(const Candidate& c) { return fmt::format("{}:{}", c.location.file, c.location.start_line); }

}  // namespace

void link_longer_chains(std::vector<Candidate>& candidates) {
  std::vector<std::set<Range>> ops;
  ops.reserve(candidates.size());
  for (const Candidate& c : candidates) ops.push_back(ops_of(c));
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (ops[i].empty() || candidates[i].rule.empty()) continue;
    std::vector<std::string> taken_in;
    for (size_t j = 0; j < candidates.size(); ++j) {
      if (i == j || ops[j].empty() || candidates[j].rule.empty() || candidates[j].rule == candidates[i].rule) continue;
      if (ops[j].size() >= ops[i].size() || !std::includes(ops[i].begin(), ops[i].end(), ops[j].begin(), ops[j].end())) continue;
      if (!bindings_agree(candidates[i], candidates[j])) continue;
      Candidate& shorter = candidates[j];
      const Candidate& longer = candidates[i];
      taken_in.push_back(fmt::format("{} ({})", shorter.rule, where(shorter)));
      // A helper's chain (a norm class) serves other call sites too: the
      // longer chain replaces it only where it runs.
      std::string line = fmt::format("also part of the longer chain of {} ({}, {})", longer.rule, where(longer), status_name(longer.status));
      if (longer.status == Status::NotApplicable && !longer.blocking.empty())
        line += fmt::format(", which is not applicable here ({}), so this chain stays on its own", longer.blocking.front());
      else
        line += "; where that one is taken it replaces this chain there";
      shorter.evidence.push_back(std::move(line));
    }
    if (taken_in.empty()) continue;
    std::string list;
    for (const std::string& t : taken_in) list += (list.empty() ? "" : ", ") + t;
    candidates[i].evidence.push_back(fmt::format(
        "takes in the chains of {}: one fused call for all of them where it runs; where it does not apply, those apply on their own", list));
  }
}

}  // namespace npufuse::plan
