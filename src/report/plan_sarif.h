#pragma once
// The plan as SARIF 2.1.0, for code-review tools and CI annotations: one
// result per candidate, its ruleId the fusion rule's id, its region the
// chain's lines. Fusable chains are warnings (there is something to do);
// blocked chains and new-operator requirements are notes.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "plan/plan.h"
#include "report/plan_markdown.h"
#include "rules/rule.h"

namespace npufuse::report {

// The ruleId of a no_fused_op result, which no rule file produces.
inline constexpr const char* kNoFusedOpRuleId = "npufuse.no_fused_op";

// Finds a rule by id (e.g. RuleSet::find); nullptr when unknown.
using RuleLookup = std::function<const rules::Rule*(const std::string& id)>;

// `find_rule` supplies the rule descriptions of tool.driver.rules; without it
// (or for a rule it does not know) the candidate's title stands in.
nlohmann::json plan_to_sarif(const plan::Plan& plan, const RuleLookup& find_rule, Lang lang);

}  // namespace npufuse::report
