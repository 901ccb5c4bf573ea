#pragma once
// Fact `moe`: whether the model routes tokens to experts. A softmax followed
// by a top-k is also how a question-answering head picks its best spans
// (XLNet), so the MoE gating rules apply only where the model has experts:
// a class the role table reads as router + experts, a routed-expert module
// in a decoder block, or an expert count in the config.
#include <vector>

#include "check/facts.h"
#include "model/module_roles.h"
#include "model/subchains.h"

namespace npufuse::plan {

// Sets `moe` unless the facts already hold it (a deployment file).
void add_moe_fact(const model::RoleTable& roles, const std::vector<model::BlockChains>* blocks, check::FactSet& facts);

}  // namespace npufuse::plan
