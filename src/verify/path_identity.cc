#include "verify/path_identity.h"

#include <filesystem>

namespace npufuse::verify {

std::string absolute_path(const std::string& path) {
  namespace fs = std::filesystem;
  return fs::weakly_canonical(fs::absolute(path)).string();
}

}  // namespace npufuse::verify
