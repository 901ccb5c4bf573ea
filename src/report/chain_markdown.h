#pragma once
// Step 2's list of the expert reference chains that apply to the model, per
// stage, each step with what covers it (plan.reference_chains), as Markdown.
#include <string>

#include "plan/plan.h"
#include "report/plan_names.h"

namespace npufuse::report {

// The lines to print (ending in a newline), or "" when no chain applies.
std::string reference_chains_markdown(const plan::Plan& plan, Lang lang);

// What people read for a step's status ("covered by", "left open", ...) and
// for the section's heading and introduction, per language; the HTML report
// uses them too.
std::string chain_status_label(const std::string& status, Lang lang);
std::string reference_chains_heading(Lang lang);
std::string reference_chains_intro(Lang lang);

}  // namespace npufuse::report
