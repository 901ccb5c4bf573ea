#pragma once
// Which inference stages a candidate applies to: the rule's own stages,
// narrowed by the branch the matched ops sit in (an op under a prefill-only
// condition runs only in prefill) and by --stage.
#include <string>
#include <vector>

#include "model/branches.h"
#include "model/dataflow.h"

namespace npufuse::plan {

// "prefill" or "decode" when the conditions around `ops` of `graph` decide
// the stage, "" when they run in both (or nothing tells). `why` receives the
// condition that decided, "cond at file:line".
std::string branch_stage(const model::FunctionDataflow& graph, const std::vector<int>& ops,
                         const std::vector<model::BranchCondition>& branches, std::string* why);

// rule stages ∩ branch stage ("" = no narrowing) ∩ requested ("both" = no narrowing), in rule order.
std::vector<std::string> split_stages(const std::vector<std::string>& rule_stages, const std::string& branch,
                                      const std::string& requested);

}  // namespace npufuse::plan
