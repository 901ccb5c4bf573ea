#include "scan/model_folders.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "util/file_io.h"

namespace npufuse::scan {

namespace fs = std::filesystem;

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_skipped_dir(const fs::path& p, const std::vector<fs::path>& skip) {
  std::string name = p.filename().string();
  if (name.empty() || name[0] == '.' || name == "__pycache__") return true;
  std::error_code ec;
  for (const auto& s : skip)
    if (fs::equivalent(p, s, ec)) return true;
  return false;
}

// The folder's files, split into model files and every Python file.
void read_folder(const fs::path& dir, ModelFolder& out) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec)) continue;
    std::string name = it->path().filename().string();
    if (name == "config.json") out.config = it->path().string();
    if (!ends_with(name, ".py")) continue;
    out.python_files.push_back(it->path().string());
    if (is_model_file_name(name)) out.model_files.push_back(it->path().string());
  }
  std::sort(out.python_files.begin(), out.python_files.end());
  std::sort(out.model_files.begin(), out.model_files.end());
}

std::string relative_name(const fs::path& dir, const fs::path& root) {
  std::string rel = dir.lexically_relative(root).generic_string();
  return rel.empty() || rel == "." ? dir.filename().generic_string() : rel;
}

}  // namespace

bool is_model_file_name(const std::string& name) {
  if (name == "model.py") return true;
  if (!starts_with(name, "modeling_") || !ends_with(name, ".py")) return false;
  return !starts_with(name, "modeling_tf_") && !starts_with(name, "modeling_flax_");
}

std::vector<std::string> model_files_in(const std::string& dir) {
  ModelFolder f;
  read_folder(dir, f);
  return f.model_files;
}

std::string folder_config(const std::vector<std::string>& paths) {
  std::error_code ec;
  if (paths.size() != 1 || !fs::is_directory(paths[0], ec)) return "";
  ModelFolder f;
  read_folder(paths[0], f);
  return f.model_files.empty() ? "" : f.config;
}

std::vector<ModelFolder> find_model_folders(const std::string& root, const std::vector<std::string>& skip) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw FileError(root + ": not a directory");
  std::vector<fs::path> skip_paths(skip.begin(), skip.end());
  fs::path root_path(root);

  std::vector<ModelFolder> found;
  std::vector<fs::path> pending{root_path};
  while (!pending.empty()) {
    fs::path dir = pending.back();
    pending.pop_back();
    ModelFolder folder;
    read_folder(dir, folder);
    if (!folder.model_files.empty()) {
      folder.name = relative_name(dir, root_path);
      folder.dir = dir.string();
      found.push_back(std::move(folder));
    }
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code type_ec;
      if (it->is_symlink(type_ec) || !it->is_directory(type_ec)) continue;
      if (!is_skipped_dir(it->path(), skip_paths)) pending.push_back(it->path());
    }
  }
  std::sort(found.begin(), found.end(), [](const ModelFolder& a, const ModelFolder& b) { return a.name < b.name; });
  return found;
}

bool is_tree(const std::vector<std::string>& paths) {
  std::error_code ec;
  if (paths.size() != 1 || !fs::is_directory(paths[0], ec)) return false;
  if (!model_files_in(paths[0]).empty()) return false;
  return !find_model_folders(paths[0]).empty();
}

}  // namespace npufuse::scan
