#include "verify/python_dir.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <vector>

#ifndef NPUFUSE_PYTHON_DIR
#define NPUFUSE_PYTHON_DIR ""
#endif

namespace npufuse::verify {
namespace {

namespace fs = std::filesystem;

bool holds_verifier(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / "npufuse_verify" / "harness.py", ec);
}

fs::path executable_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

}  // namespace

std::string find_python_dir(const std::string& given) {
  std::vector<fs::path> tried;
  if (!given.empty()) tried.push_back(given);
  if (const char* env = std::getenv("NPUFUSE_PYTHON_DIR"); env && *env) tried.push_back(env);
  if (fs::path exe = executable_dir(); !exe.empty()) {
    tried.push_back(exe / ".." / "python");
    tried.push_back(exe / ".." / ".." / "python");
  }
  if (*NPUFUSE_PYTHON_DIR) tried.push_back(NPUFUSE_PYTHON_DIR);
  for (const fs::path& p : tried)
    if (holds_verifier(p)) return fs::weakly_canonical(p).string();
  std::vector<std::string> names;
  for (const fs::path& p : tried) names.push_back(p.string());
  throw std::runtime_error(fmt::format("python/npufuse_verify not found (looked in {}); give --python-dir",
                                       fmt::join(names, ", ")));
}

}  // namespace npufuse::verify
