#pragma once
// Step 2's list of the expert reference chains that apply to the model, per
// stage, each step with what covers it (plan.reference_chains), as Markdown.
#include <string>

#include "plan/plan.h"
#include "report/plan_names.h"

namespace npufuse::report {

// The lines to print (ending in a newline), or "" when no chain applies.
std::string reference_chains_markdown(const plan::Plan& plan, Lang lang);

}  // namespace npufuse::report
