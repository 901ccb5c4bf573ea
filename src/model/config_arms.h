#pragma once
// Which arm of a configuration branch a given config takes. A test that
// reads only the module's own settings (`self.score_func == "sigmoid"`,
// `self.q_lora_rank == 0`, `self.attn_impl == "naive"`) is fixed once the
// module is built; it is evaluated in the scope of the owner's `__init__`
// with the config loaded, so the inventory can say which arm runs.
#include <string>
#include <vector>

#include "model/branches.h"
#include "model/evaluator.h"
#include "model/module_roles.h"

namespace npufuse::model {

// Fills `config_arm` / `config_value` of the config_choice and
// attention_dispatch branches whose test the owner's settings decide; others
// are left empty.
void evaluate_config_arms(std::vector<BranchCondition>& branches, const RoleTable& roles, Evaluator& ev);

// The config_choice branch whose decided arm rules out code running under
// `condition` (a dataflow op's condition, in `file`): a clause of it is a
// test the loaded config makes false (`self.topk_method == "group_limited_greedy"`
// with topk_method = "greedy", `self.norm_topk_prob` with norm_topk_prob =
// False) or the negation of one it makes true. An inlined helper's ops carry
// their caller's tests, so the branch's lines are not compared; tests written
// alike that the config decides both ways decide nothing. nullptr when no
// clause is ruled out.
const BranchCondition* config_ruled_out(const std::vector<BranchCondition>& branches, const std::string& condition,
                                        const std::string& file);

}  // namespace npufuse::model
