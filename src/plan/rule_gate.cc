#include "plan/rule_gate.h"

#include <fmt/format.h>

#include <map>
#include <stdexcept>
#include <vector>

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
    // How each missing fact is given: its analyze flag, else the deployment file.
    static const std::map<std::string, std::string> flags = {
        {"quant", "--quant w8a8"}, {"ep", "--ep 8"}, {"tp", "--tp 2"}, {"dp", "--dp 2"},
        {"chip", "--chip A2"},     {"stage", "--stage decode"}};
    std::vector<std::string> how;
    for (const std::string& fact : value.missing) {
      auto flag = flags.find(fact);
      how.push_back(flag != flags.end() ? "e.g. " + flag->second : fmt::format("`{} = ...` in a --deploy file", fact));
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

}  // namespace npufuse::plan
