#pragma once
// Shared by the apply tests: scratch directories and running a shell command.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apply/patch_plan.h"
#include "plan/analyze.h"
#include "report/plan_json.h"
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

// `text` with its first `from` replaced by `to`; a fixture text not found fails the test.
inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "fixture text not found: " << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

inline bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// tests/models/<model>'s model.py, edited by `edit`, and its config.json
// copied into `dir`, analysed into dir/plan.json; returns the plan's path.
// `config_edit` changes the config first; a null result analyses without one.
inline std::string plan_for_model_copy(const ScratchDir& dir, const std::string& model,
                                       const std::function<std::string(std::string)>& edit = nullptr,
                                       const std::function<nlohmann::json(nlohmann::json)>& config_edit = nullptr) {
  std::string text = read_file(source_path("tests/models/" + model + "/model.py"));
  if (edit) text = edit(text);
  write_file_atomic(dir.file("model.py"), text);
  nlohmann::json config = nlohmann::json::parse(read_file(source_path("tests/models/" + model + "/config.json")));
  if (config_edit) config = config_edit(config);
  plan::AnalyzeOptions o;
  o.paths = {dir.file("model.py")};
  if (!config.is_null()) {
    write_file_atomic(dir.file("config.json"), config.dump(2));
    o.config = dir.file("config.json");
  }
  write_file_atomic(dir.file("plan.json"), report::plan_to_json(plan::analyze(o)).dump(2));
  return dir.file("plan.json");
}

// `text` written as dir/model.py, analysed (with the rules of `rules_dir`
// when given) into dir/plan.json, and patched.
inline PatchSet patches_for_text(const ScratchDir& dir, const std::string& text, const std::string& rules_dir = "") {
  write_file_atomic(dir.file("model.py"), text);
  plan::AnalyzeOptions o;
  o.paths = {dir.file("model.py")};
  o.rules_dir = rules_dir;
  write_file_atomic(dir.file("plan.json"), report::plan_json_text(plan::analyze(o)));
  return make_patches(PatchRequest{dir.file("plan.json"), {}, {}});
}

}  // namespace npufuse::apply::testing
