#pragma once
// The verification report (`npufuse verify`) and the optimisation report
// (`apply --verify`) as JSON (schema in docs/verify.md) and Markdown.
#include <nlohmann/json.hpp>
#include <string>

#include "verify/verdict.h"

namespace npufuse::verify {

nlohmann::ordered_json report_json(const VerifyReport& report);
std::string report_markdown(const VerifyReport& report);

}  // namespace npufuse::verify
