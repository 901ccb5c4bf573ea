#include "verify/apply_manifest.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "util/file_io.h"
#include "verify/path_identity.h"

namespace npufuse::verify {

namespace fs = std::filesystem;

std::string write_apply_manifest(const std::string& out_dir, const ApplyManifest& m) {
  nlohmann::ordered_json j;
  j["schema"] = "npufuse-apply-manifest/2";
  j["plan"] = absolute_path(m.plan);
  j["paths"] = m.paths;
  j["cwd"] = m.cwd.empty() ? fs::current_path().string() : absolute_path(m.cwd);
  j["applied"] = m.applied;
  std::string path = (fs::path(out_dir) / kApplyManifestName).string();
  make_directories(out_dir);
  write_file_atomic(path, j.dump(2) + "\n");
  return path;
}

ApplyManifest read_apply_manifest(const std::string& dir) {
  std::string path = (fs::path(dir) / kApplyManifestName).string();
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw FileError(fmt::format("{}: no {} here; give the plan, or a folder written by `npufuse apply --out`", dir,
                                kApplyManifestName));
  std::string text = read_file(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann reports a byte offset; people read line:col.
    size_t at = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
    size_t line_start = text.rfind('\n', at == 0 ? 0 : at - 1);
    size_t col = at - (line_start == std::string::npos || at == 0 ? 0 : line_start + 1) + 1;
    throw FileError(fmt::format("{}:{}:{}: not valid JSON", path, line, col));
  }
  ApplyManifest m;
  try {
    m.plan = j.at("plan").get<std::string>();
    m.paths = j.value("paths", std::vector<std::string>{});
    m.applied = j.at("applied").get<std::vector<std::string>>();
    m.cwd = j.value("cwd", std::string());
  } catch (const nlohmann::json::exception& e) {
    throw FileError(fmt::format("{}:1:1: {}", path, e.what()));
  }
  return m;
}

}  // namespace npufuse::verify
