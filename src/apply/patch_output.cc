#include "apply/patch_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "apply/apply_error.h"
#include "apply/unified_diff.h"
#include "util/file_io.h"

namespace npufuse::apply {
namespace {

namespace fs = std::filesystem;

fs::path absolute_clean(const std::string& p) { return fs::weakly_canonical(fs::absolute(p)); }

bool exists_with_other_bytes(const std::string& path, const std::string& bytes) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return false;
  return read_file(path) != bytes;
}

}  // namespace

std::vector<std::string> shown_paths(const std::vector<PatchedFile>& files) {
  std::vector<std::string> out;
  if (files.empty()) return out;
  fs::path common = absolute_clean(files.front().path).parent_path();
  for (const PatchedFile& f : files) {
    fs::path dir = absolute_clean(f.path).parent_path();
    while (!common.empty() && std::mismatch(common.begin(), common.end(), dir.begin(), dir.end()).first != common.end())
      common = common.parent_path();
  }
  for (const PatchedFile& f : files) out.push_back(absolute_clean(f.path).lexically_relative(common).generic_string());
  return out;
}

Written write_patches(const PatchSet& patches, const OutputRequest& request) {
  Written written;
  std::vector<std::string> shown = shown_paths(patches.files);
  for (size_t i = 0; i < patches.files.size(); ++i) {
    const PatchedFile& f = patches.files[i];
    written.diff += unified_diff(shown[i], f.original, f.edits);
  }

  if (!request.out_dir.empty()) {
    std::vector<fs::path> inputs;
    for (const PatchedFile& f : patches.files) inputs.push_back(absolute_clean(f.path));
    for (size_t i = 0; i < patches.files.size(); ++i) {
      fs::path target = absolute_clean((fs::path(request.out_dir) / shown[i]).string());
      if (std::find(inputs.begin(), inputs.end(), target) != inputs.end())
        throw ApplyError(fmt::format("{}: --out {} would overwrite this input; choose another directory (or --in-place)",
                                     patches.files[i].path, request.out_dir));
    }
    for (size_t i = 0; i < patches.files.size(); ++i) {
      fs::path target = fs::path(request.out_dir) / shown[i];
      make_parent_directories(target.string());
      write_file_atomic(target.string(), patches.files[i].patched);
      written.files.push_back(target.string());
    }
  }

  if (request.in_place) {
    for (const PatchedFile& f : patches.files) {
      if (f.patched == f.original) continue;
      std::string backup = f.path + ".orig";
      // An older backup holds the real original: never replace it.
      if (exists_with_other_bytes(backup, f.original))
        throw ApplyError(fmt::format("{}: a different {} exists; move it away before patching in place", f.path, backup));
    }
    for (const PatchedFile& f : patches.files) {
      if (f.patched == f.original) continue;
      write_file_atomic(f.path + ".orig", f.original);
      write_file_atomic(f.path, f.patched);
      written.files.push_back(f.path + ".orig");
      written.files.push_back(f.path);
    }
  }

  if (request.diff_file == "-") {
    std::fwrite(written.diff.data(), 1, written.diff.size(), stdout);
  } else if (!request.diff_file.empty()) {
    make_parent_directories(request.diff_file);
    write_file_atomic(request.diff_file, written.diff);
    written.files.push_back(request.diff_file);
  }
  return written;
}

}  // namespace npufuse::apply
