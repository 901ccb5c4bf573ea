#pragma once
// Shared by the scan tests: scratch trees of model folders built from the
// test models, and a shell runner for the CLI tests.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "util/file_io.h"

namespace npufuse::scan::testing {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed by the destructor.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    static std::atomic<int> serial{0};
    path_ = fs::temp_directory_path() /
            ("npufuse_scan_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(serial++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() { fs::remove_all(path_); }
  std::string file(const std::string& rel) const { return (path_ / rel).string(); }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

inline std::string source_path(const std::string& rel) { return std::string(NPUFUSE_SOURCE_DIR) + "/" + rel; }

inline void write_text(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  write_file_atomic(path, text);
}

// tests/models/<model>/model.py (and its config.json) copied to <root>/<as>/<file_name>.
inline void copy_test_model(const std::string& model, const std::string& root, const std::string& as,
                            const std::string& file_name = "model.py") {
  fs::path dir = fs::path(root) / as;
  fs::create_directories(dir);
  fs::copy_file(source_path("tests/models/" + model + "/model.py"), dir / file_name, fs::copy_options::overwrite_existing);
  fs::copy_file(source_path("tests/models/" + model + "/config.json"), dir / "config.json",
                fs::copy_options::overwrite_existing);
}

inline int shell(const std::string& command) {
  int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace npufuse::scan::testing
