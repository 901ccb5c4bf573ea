#include "plan/rule_gate.h"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "check/evaluate.h"
#include "check/expr.h"
#include "check/expr_parser.h"
#include "plan/fact_flags.h"

namespace npufuse::plan {

namespace {

check::Partial evaluate_when(const rules::Rule& rule, const check::FactSet& facts, check::ExprPtr& condition) {
  try {
    condition = check::parse_constraint_expression(rule.when);
  } catch (const check::ExprSyntaxError& e) {
    throw std::invalid_argument(fmt::format("{}: RULE['when'] col {}: {}", rule.path, e.col(), e.what()));
  }
  return check::evaluate(*condition, facts);
}

}  // namespace

std::optional<std::string> rule_withheld(const rules::Rule& rule, const check::FactSet& facts) {
  if (rule.when.empty()) return std::nullopt;
  check::ExprPtr condition;
  check::Partial value = evaluate_when(rule, facts, condition);
  if (!value.known()) {
    // How each missing fact is given: its analyze flag, else the deployment file.
    std::vector<std::string> how;
    for (const std::string& fact : value.missing) {
      FactFlag flag = fact_flag(fact);
      how.push_back(!flag.flag.empty() ? "e.g. " + flag.example : fmt::format("`{} = ...` in a --deploy file", fact));
    }
    return fmt::format("it applies only when {}, and {} is not known (give it, {}, to see it)", rule.when,
                       fmt::join(value.missing, ", "), fmt::join(how, "; "));
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

std::vector<std::string> rule_gate_unknowns(const rules::Rule& rule, const check::FactSet& facts) {
  if (rule.when.empty()) return {};
  check::ExprPtr condition;
  check::Partial value = evaluate_when(rule, facts, condition);
  if (value.known()) return {};
  return {value.missing.begin(), value.missing.end()};
}

}  // namespace npufuse::plan
