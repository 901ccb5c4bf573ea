#pragma once
// Step 4 of the workflow, evaluated: the four review items of the analysis
// stage, each passed or failed with every failing item named.
//   decomposition_complete: every block's modules decomposed into their
//     replaceable steps (prefill/decode included), none missing;
//   reference_matched: every module's key step matched by a rule (or shown
//     to have no operator), steps outside the reference chains analysed;
//   constraints_confirmed: every candidate API in the catalog, every check
//     answered (no unknown left);
//   candidates_listed: every candidate has a status, stages, a location, a
//     verification cut, and the evidence its status needs.
#include <vector>

#include "catalog/catalog.h"
#include "model/subchains.h"
#include "plan/plan.h"

namespace npufuse::plan {

// `blocks` is null when the sub-chain decomposition was not available.
std::vector<ReviewItem> run_review(const Plan& plan, const std::vector<model::BlockChains>* blocks,
                                   const catalog::Catalog& catalog);

}  // namespace npufuse::plan
