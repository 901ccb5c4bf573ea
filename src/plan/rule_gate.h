#pragma once
// RULE["when"]: a rule that only makes sense for some deployments (the
// quantised chains) says so as a condition on facts. A match of such a rule
// is offered only when the condition holds with the facts known; when it is
// false or cannot be decided, the plan leaves the match out and says why in
// its notes, so a bf16 model is never told to quantise.
#include <optional>
#include <string>
#include <vector>

#include "check/facts.h"
#include "rules/rule.h"

namespace npufuse::plan {

// Why the rule's matches are not offered with these facts, or nothing when
// the rule has no `when` or its condition holds. An unparsable condition is
// a rule error and throws std::invalid_argument naming the rule file.
std::optional<std::string> rule_withheld(const rules::Rule& rule, const check::FactSet& facts);

// The facts the rule's condition needs and the deployment does not give, so
// that it cannot be decided (empty when it can, or the rule has none).
std::vector<std::string> rule_gate_unknowns(const rules::Rule& rule, const check::FactSet& facts);

}  // namespace npufuse::plan
