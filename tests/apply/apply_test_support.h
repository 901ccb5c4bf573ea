#pragma once
// Shared by the apply tests: scratch directories and running a shell command.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "util/file_io.h"

namespace npufuse::apply::testing {

// A fresh directory under the system temp dir, removed by the destructor.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    path_ = std::filesystem::temp_directory_path() / ("npufuse_apply_" + tag + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline int shell(const std::string& command) { return std::system(command.c_str()); }

inline std::string source_path(const std::string& rel) { return std::string(NPUFUSE_SOURCE_DIR) + "/" + rel; }

}  // namespace npufuse::apply::testing
