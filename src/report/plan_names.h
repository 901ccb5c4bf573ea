#pragma once
// The words the plan's enums are written as in JSON and SARIF, and back; and
// the labels people read in the Markdown and HTML reports, per language.
#include <optional>
#include <string>
#include <string_view>

#include "check/evaluate.h"
#include "model/inventory_markdown.h"
#include "plan/plan.h"

namespace npufuse::report {

const char* status_word(plan::Status s);
std::optional<plan::Status> status_from_word(std::string_view word);

std::optional<check::Answer> answer_from_word(std::string_view word);

using Lang = model::Lang;
std::string status_label(plan::Status s, Lang lang);
std::string answer_label(check::Answer a, Lang lang);
std::string stage_label(const std::string& stage, Lang lang);  // "both" reads "Prefill + Decode" in zh

}  // namespace npufuse::report
