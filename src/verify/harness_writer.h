#pragma once
// The generated harness: one runnable Python file per candidate. It holds its
// spec as a JSON literal (so a reader sees exactly what is checked) and hands
// it to python/npufuse_verify/harness.py, which prints one JSON result line.
// Run it again by hand with `/usr/bin/python3 FILE`.
#include <string>

#include "verify/harness_spec.h"

namespace npufuse::verify {

// python_dir: the folder holding npufuse_verify, npufuse_rules and npufuse_ref.
std::string harness_text(const HarnessSpec& spec, const std::string& python_dir);

}  // namespace npufuse::verify
