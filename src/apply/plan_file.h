#pragma once
// Reading the plan `npufuse analyze --format json` wrote, and refusing it
// when the sources it describes have changed since.
#include <string>

#include "plan/plan.h"

namespace npufuse::apply {

// Throws ApplyError: unreadable file, JSON syntax error (file:line:col), or a
// field that does not follow docs/analyze-schema.md (file: JSON path: what).
plan::Plan read_plan_file(const std::string& path);

// Throws ApplyError naming the first analysed file whose bytes no longer
// hash to what the plan recorded (or that is gone, or has no hash), each read
// at the path the plan records (apply/plan_paths.h reads them where the
// paths given now put them).
void check_plan_is_current(const plan::Plan& plan, const std::string& plan_path);

}  // namespace npufuse::apply
