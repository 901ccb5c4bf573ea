#pragma once
// A rule's `checks` ("api:*" = every constraint of that operator, or
// "api:constraint_id") evaluated against the facts of each stage the
// candidate applies to, plus whether the target chip is one of the
// operator's products. A constraint answered alike in every stage gives one
// result; otherwise one per stage, each naming its stage.
#include <string>
#include <utility>
#include <vector>

#include "catalog/catalog.h"
#include "check/facts.h"
#include "plan/plan.h"
#include "rules/rule.h"

namespace npufuse::plan {

struct StageFacts {
  std::string stage;  // prefill | decode
  check::FactSet facts;
};

std::vector<CheckResult> evaluate_checks(const rules::Rule& rule, const catalog::Catalog& catalog,
                                         const std::vector<StageFacts>& stages);

// A violated error-severity result, written as a citation for `blocking`:
// "npu_x:id: message (doc)".
std::string blocking_text(const CheckResult& r);

}  // namespace npufuse::plan
