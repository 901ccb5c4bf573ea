#pragma once
// The plan for people, in English or Chinese, in the order of the workflow:
// the facts known and asked for, step 1 (modules), step 2 (reference-chain
// coverage), step 3 (candidates by module, each constraint check with its
// answer and doc), new-operator requirements, step 4 (review checklist).
#include <string>

#include "model/inventory_markdown.h"
#include "plan/plan.h"

namespace npufuse::report {

using Lang = model::Lang;

std::string plan_to_markdown(const plan::Plan& plan, Lang lang);

}  // namespace npufuse::report
