#pragma once
// The source facts `npufuse apply` needs about a matched chain (byte ranges
// of its ops and results, the names its results were bound to, its
// bindings), copied from the match onto the candidate.
#include <vector>

#include "model/branches.h"
#include "plan/model_matches.h"
#include "plan/plan.h"

namespace npufuse::plan {

// Ops that compute something; inputs, literals, attribute reads and tuple
// plumbing (merges after an if, packing and unpacking) have no statement of
// their own to rewrite.
bool computes(const model::DataflowOp& op);

void fill_apply_site(const MatchSite& site, Candidate& candidate);

// The config-decided `if` tests (model/config_arms.h) in the files of the
// candidate's ops, onto Candidate::apply_config_arms.
void note_config_arms(const std::vector<model::BranchCondition>& branches, Candidate& candidate);

}  // namespace npufuse::plan
