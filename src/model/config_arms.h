#pragma once
// Which arm of a configuration branch a given config takes. A test that
// reads only the module's own settings (`self.score_func == "sigmoid"`,
// `self.q_lora_rank == 0`, `self.attn_impl == "naive"`) is fixed once the
// module is built; it is evaluated in the scope of the owner's `__init__`
// with the config loaded, so the inventory can say which arm runs.
#include <vector>

#include "model/branches.h"
#include "model/evaluator.h"
#include "model/module_roles.h"

namespace npufuse::model {

// Fills `config_arm` / `config_value` of the config_choice and
// attention_dispatch branches whose test the owner's settings decide; others
// are left empty.
void evaluate_config_arms(std::vector<BranchCondition>& branches, const RoleTable& roles, Evaluator& ev);

}  // namespace npufuse::model
