#include "plan/stage_split.h"

#include <algorithm>

namespace npufuse::plan {
namespace {

std::string squeeze(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\n' && c != '\\') out += c;
  return out;
}

const model::BranchCondition* find_branch(const std::string& text, const std::vector<model::BranchCondition>& branches) {
  std::string key = squeeze(text);
  for (const model::BranchCondition& b : branches)
    if (squeeze(b.condition) == key) return &b;
  return nullptr;
}

// The stage one conjunct decides, or "".
std::string conjunct_stage(const std::string& part, const std::vector<model::BranchCondition>& branches,
                           std::string* why) {
  bool negated = part.rfind("not (", 0) == 0 && part.back() == ')';
  std::string inner = negated ? part.substr(5, part.size() - 6) : part;
  const model::BranchCondition* b = find_branch(inner, branches);
  if (!b || (b->true_stage != "prefill" && b->true_stage != "decode")) return "";
  if (why) *why = b->condition + " at " + b->where.str();
  return negated ? model::opposite_stage(b->true_stage) : b->true_stage;
}

}  // namespace

std::string branch_stage(const model::FunctionDataflow& graph, const std::vector<int>& ops,
                         const std::vector<model::BranchCondition>& branches, std::string* why) {
  std::string stage;
  for (int id : ops) {
    if (id < 0 || static_cast<size_t>(id) >= graph.ops.size()) continue;
    const std::string& condition = graph.ops[static_cast<size_t>(id)].condition;
    if (condition.empty()) continue;
    // An op's condition joins the conditions of the branches around it with
    // " and ", so a branch whose own test is a conjunction (`if
    // use_precomputed_states and seq_len == 1:`) spans several clauses in a
    // row: each run of clauses is tried as one branch's test.
    const std::vector<std::string> parts = model::condition_clauses(condition);
    for (size_t first = 0; first < parts.size(); ++first) {
      std::string run;
      for (size_t last = first; last < parts.size(); ++last) {
        run += (last == first ? "" : " and ") + parts[last];
        std::string s = conjunct_stage(run, branches, why);
        if (s.empty()) continue;
        // Ops of one match in opposite stage branches: the match spans both arms; no narrowing.
        if (!stage.empty() && s != stage) return "";
        stage = s;
      }
    }
  }
  return stage;
}

std::vector<std::string> split_stages(const std::vector<std::string>& rule_stages, const std::string& branch,
                                      const std::string& requested) {
  std::vector<std::string> out;
  for (const std::string& s : rule_stages) {
    if (!branch.empty() && s != branch) continue;
    if (requested != "both" && s != requested) continue;
    out.push_back(s);
  }
  return out;
}

}  // namespace npufuse::plan
