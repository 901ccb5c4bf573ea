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

int span_lines(const Candidate& c) {
  int lines = 0;
  for (const Location& p : c.parts) lines += p.end_line - p.start_line + 1;
  return std::max(lines, c.location.end_line - c.location.start_line + 1);
}

// One rule seen twice on one chain keeps the match that covers the most
// lines: the inlined caller's match also covers the steps around the helper
// (repeat_kv around an eager attention core).
void keep_widest_per_rule(std::vector<Candidate>& group) {
  std::vector<Candidate> kept;
  for (Candidate& c : group) {
    auto same = std::find_if(kept.begin(), kept.end(), [&](const Candidate& k) { return k.rule == c.rule; });
    if (same == kept.end()) {
      kept.push_back(std::move(c));
    } else if (span_lines(c) > span_lines(*same)) {
      *same = std::move(c);
    }
  }
  group = std::move(kept);
}

bool overlap(const Location& a, const Location& b) {
  return a.file == b.file && a.start_line <= b.end_line && b.start_line <= a.end_line;
}

bool share_a_stage(const Candidate& a, const Candidate& b) {
  if (a.stages.empty() || b.stages.empty()) return true;
  for (const std::string& s : a.stages)
    if (std::find(b.stages.begin(), b.stages.end(), s) != b.stages.end()) return true;
  return false;
}

// Whether two matches replace one computation: some op the one rewrites is
// an op of the other (the same bytes of the same file). Two chains that sit
// on interleaved lines of one function without sharing an op (MLA's prolog
// writing the caches, the attention core reading them) are two edits.
bool share_an_op(const Candidate& a, const Candidate& b) {
  for (const Candidate::SourceRange& x : a.apply_ops)
    for (const Candidate::SourceRange& y : b.apply_ops)
      if (x.begin == y.begin && x.end == y.end && x.file == y.file) return true;
  return false;
}

}  // namespace

bool same_chain(const Candidate& a, const Candidate& b) {
  if (a.status == Status::NoFusedOp || b.status == Status::NoFusedOp) return false;
  if (a.module != b.module) return false;
  // A prefill-only and a decode-only replacement of one core are two entries,
  // one per stage, not alternatives of each other.
  if (!share_a_stage(a, b)) return false;
  // The primary locations are where each replacement call would go. Two
  // matches of one rule on overlapping lines (a helper matched on its own and
  // inlined into its caller) are one chain seen twice; two rules wanting to
  // replace overlapping lines of one function are two ways of doing one edit
  // (FIA prefill with or without a window may end a line apart). Parts are not
  // compared: one helper (a norm class) serves many call sites, and its own
  // standalone match is the edit apply can make. Where both matches know
  // their ops, the lines overlap only by interleaving unless an op is shared.
  if (!overlap(a.location, b.location)) return false;
  return a.apply_ops.empty() || b.apply_ops.empty() || share_an_op(a, b);
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
    // A chain's group is closed under same_chain: a match meeting any member
    // joins it (the front may be a narrower match of a rule that a later
    // member covers more widely).
    for (bool grew = true; grew;) {
      grew = false;
      for (size_t j = i + 1; j < candidates.size(); ++j) {
        if (taken[j]) continue;
        bool meets = std::any_of(group.begin(), group.end(),
                                 [&](const Candidate& g) { return same_chain(g, candidates[j]); });
        if (!meets) continue;
        taken[j] = true;
        group.push_back(std::move(candidates[j]));
        grew = true;
      }
    }
    keep_widest_per_rule(group);
    std::stable_sort(group.begin(), group.end(), prefer_order);
    Candidate preferred = std::move(group.front());
    for (size_t k = 1; k < group.size(); ++k) preferred.alternatives.push_back(std::move(group[k]));
    out.push_back(std::move(preferred));
  }
  candidates = std::move(out);
}

}  // namespace npufuse::plan
