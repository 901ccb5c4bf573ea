#pragma once
// The plan as JSON, and back. The layout is documented in
// docs/analyze-schema.md and checked by docs/analyze.schema.json; readers
// (`apply`, `explain`) refuse a schema_version they do not know.
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "plan/plan.h"

namespace npufuse::report {

// The only plan layout this version writes and reads.
inline constexpr int kPlanSchemaVersion = 2;

nlohmann::json plan_to_json(const plan::Plan& plan);

// The same plan as text: exactly plan_to_json(plan).dump(2) and a newline,
// written without building the document (plan_json_text.cc). What
// `analyze --format json` prints and a tree scan writes per model.
std::string plan_json_text(const plan::Plan& plan);

// A plan file that does not follow the schema: the message names the JSON
// path of the first offending field ("candidates[3].status: ...").
class PlanFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads what plan_to_json wrote. Throws PlanFormatError.
plan::Plan plan_from_json(const nlohmann::json& j);

}  // namespace npufuse::report
