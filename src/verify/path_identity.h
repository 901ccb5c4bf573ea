#pragma once
// One spelling per file for comparing paths: absolute, symlinks and `..`
// resolved as far as the path exists (the rest kept as written).
#include <string>

namespace npufuse::verify {

std::string absolute_path(const std::string& path);

}  // namespace npufuse::verify
