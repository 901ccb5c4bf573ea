#pragma once
// Reading what a harness or the model check printed: one JSON object on the
// last non-empty stdout line. A run that printed none (a crash, a timeout)
// becomes a failed result carrying the process's own words as evidence.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "verify/python_runner.h"

namespace npufuse::verify {

struct CheckResult {
  bool passed = false;
  std::string error;               // harness error text, crash or timeout
  nlohmann::ordered_json data;     // the whole printed object (empty when none)

  std::optional<double> number(const char* key) const;  // max_abs, max_rel, cosine, ...
  std::string text(const char* key) const;               // cut, cut_note, device, skipped, ...
};

CheckResult read_result(const ProcessResult& run, const std::string& what);

}  // namespace npufuse::verify
