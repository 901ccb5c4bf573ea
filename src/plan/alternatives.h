#pragma once
// Several rules can recognise the same chain: half-split RoPE is both
// rope.rope_half (npu_apply_rotary_pos_emb, q and k in one call) and
// rope.rope_half_rotary_mul (npu_rotary_mul per tensor); an attention core
// can be FIA or FIA v2. For the user that is one chain and a choice, so the
// plan lists it once: the preferred candidate, and the others as its
// alternatives, each keeping its own checks, status and prerequisites.
#include <vector>

#include "plan/plan.h"

namespace npufuse::plan {

// Whether two candidates of different rules are the same chain: same module,
// a shared stage, overlapping primary locations (where the replacement goes)
// and, where both know the ops they rewrite, at least one op in common.
bool same_chain(const Candidate& a, const Candidate& b);

// Folds every group of same-chain candidates into its preferred one (the
// first after prefer_order) in place; keeps the list's order otherwise.
void group_alternatives(std::vector<Candidate>& candidates);

// Strict weak order, best first: the status that asks the user least
// (candidate, then with prerequisites, then not applicable), fewer
// prerequisites, higher confidence, then the rule id so ties read the same
// every run.
bool prefer_order(const Candidate& a, const Candidate& b);

}  // namespace npufuse::plan
