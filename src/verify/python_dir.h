#pragma once
// Where python/ (npufuse_verify, npufuse_rules, npufuse_ref) lives:
// --python-dir, else $NPUFUSE_PYTHON_DIR, else next to the executable
// (../python or ../../python: a build folder inside the source tree), else
// the source tree npufuse was built from.
#include <string>

namespace npufuse::verify {

// Throws std::runtime_error naming the places looked at when none holds
// npufuse_verify/harness.py.
std::string find_python_dir(const std::string& given);

}  // namespace npufuse::verify
