#pragma once
// The words the plan's enums are written as in JSON and SARIF, and back.
#include <optional>
#include <string_view>

#include "check/evaluate.h"
#include "plan/plan.h"

namespace npufuse::report {

const char* status_word(plan::Status s);
std::optional<plan::Status> status_from_word(std::string_view word);

std::optional<check::Answer> answer_from_word(std::string_view word);

}  // namespace npufuse::report
