#include "plan/alternatives.h"

#include <algorithm>
#include <tuple>

namespace npufuse::plan {
namespace {

int status_rank(Status s) {
  switch (s) {
    case Status::Candidate: return 0;
    case Status::CandidateWithPrerequisites: return 1;
    case Status::NotApplicable: return 2;
    case Status::NoFusedOp: return 3;
  }
  return 3;
}

}  // namespace

bool same_chain(const Candidate& a, const Candidate& b) {
  if (a.status == Status::NoFusedOp || b.status == Status::NoFusedOp) return false;
  if (a.rule == b.rule || a.module != b.module) return false;
  // The primary locations are where each replacement call would go: two
  // rules wanting to replace overlapping lines of one function are two ways
  // of doing one edit (FIA prefill with or without a window may end a line
  // apart), never two edits.
  return a.location.file == b.location.file && a.location.start_line <= b.location.end_line &&
         b.location.start_line <= a.location.end_line;
}

bool prefer_order(const Candidate& a, const Candidate& b) {
  return std::make_tuple(status_rank(a.status), a.prerequisites.size(), -a.confidence, a.rule) <
         std::make_tuple(status_rank(b.status), b.prerequisites.size(), -b.confidence, b.rule);
}

void group_alternatives(std::vector<Candidate>& candidates) {
  std::vector<Candidate> out;
  std::vector<bool> taken(candidates.size(), false);
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (taken[i]) continue;
    std::vector<Candidate> group{std::move(candidates[i])};
    for (size_t j = i + 1; j < candidates.size(); ++j) {
      if (taken[j] || !same_chain(group.front(), candidates[j])) continue;
      taken[j] = true;
      group.push_back(std::move(candidates[j]));
    }
    std::stable_sort(group.begin(), group.end(), prefer_order);
    Candidate preferred = std::move(group.front());
    for (size_t k = 1; k < group.size(); ++k) preferred.alternatives.push_back(std::move(group[k]));
    out.push_back(std::move(preferred));
  }
  candidates = std::move(out);
}

}  // namespace npufuse::plan
