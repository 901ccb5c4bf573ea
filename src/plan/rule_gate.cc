#include "plan/rule_gate.h"

#include <fmt/format.h>

#include <stdexcept>

#include "check/evaluate.h"
#include "check/expr.h"
#include "check/expr_parser.h"

namespace npufuse::plan {

std::optional<std::string> rule_withheld(const rules::Rule& rule, const check::FactSet& facts) {
  if (rule.when.empty()) return std::nullopt;
  check::ExprPtr condition;
  try {
    condition = check::parse_constraint_expression(rule.when);
  } catch (const check::ExprSyntaxError& e) {
    throw std::invalid_argument(fmt::format("{}: RULE['when'] col {}: {}", rule.path, e.col(), e.what()));
  }
  check::Partial value = check::evaluate(*condition, facts);
  if (!value.known()) {
    return fmt::format("it applies only when {}, and {} is not known (give it, e.g. --quant w8a8, to see it)",
                       rule.when, fmt::join(value.missing, ", "));
  }
  if (value.value->is_bool() && value.value->as_bool()) return std::nullopt;
  // Name the facts the condition read, so the note says what the model is.
  std::string known;
  for (const std::string& name : check::fact_names(*condition)) {
    if (const check::Fact* fact = facts.find(name))
      known += fmt::format("{}{} = {} ({})", known.empty() ? "" : ", ", name, fact->value.repr(), fact->provenance);
  }
  return fmt::format("it applies only when {}, and here {}", rule.when, known.empty() ? "it is false" : known);
}

}  // namespace npufuse::plan
