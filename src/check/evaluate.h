#pragma once
// Three-valued evaluation of constraint expressions against a FactSet.
//
// A missing fact does not stop evaluation: it makes the value unknown, and
// unknown spreads upward unless the other side decides (`False and ?` is
// False, `True or ?` is True, `x in []` is False). The result lists every
// fact whose absence kept the answer open, so the plan can ask for them.
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "check/constraint.h"
#include "check/facts.h"

namespace npufuse::check {

// A type error or an arithmetic error (division by zero) during evaluation.
// The message names the constraint and its file when it comes from
// evaluate_constraint.
class EvalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The value of an expression, or unknown with the facts that were missing.
struct Partial {
  std::optional<Value> value;
  std::vector<std::string> missing;  // sorted, unique; non-empty iff !value

  bool known() const { return value.has_value(); }
};

Partial evaluate(const Expr& e, const FactSet& facts);

enum class Answer { Holds, Violated, Unknown, NotApplicable };
const char* answer_name(Answer a);

struct ConstraintResult {
  const Constraint* constraint = nullptr;
  Answer answer = Answer::Unknown;
  std::vector<std::string> missing;  // Unknown: the facts to ask for
  // The facts the answer rests on, with their provenance ("num_kv_heads = 8 (config.json: ...)").
  std::vector<std::string> evidence;
};

// `when` false -> NotApplicable; otherwise `require` decides. An unknown
// `when` with a holding `require` still holds.
ConstraintResult evaluate_constraint(const Constraint& c, const FactSet& facts);

}  // namespace npufuse::check
