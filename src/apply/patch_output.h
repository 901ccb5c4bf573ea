#pragma once
// Workflow step 5, second half: writing what make_patches produced. Patched
// copies go under --out DIR (never over an input); --in-place replaces each
// changed file atomically after keeping FILE.orig; --diff writes unified
// diffs that `git apply` accepts.
#include <string>
#include <vector>

#include "apply/patch_plan.h"

namespace npufuse::apply {

struct OutputRequest {
  std::string out_dir;    // empty: no copies
  std::string diff_file;  // empty: no diff; "-": stdout
  bool in_place = false;
};

struct Written {
  std::vector<std::string> files;    // every file written (copies, in-place files, backups, the diff)
  std::string diff;                  // the whole diff text
};

// The path each file has in diffs and under --out: relative to the nearest
// directory that holds all analysed files.
std::vector<std::string> shown_paths(const std::vector<PatchedFile>& files);

// Throws ApplyError (an output that would overwrite an input, a backup that
// exists with other bytes) and FileError.
Written write_patches(const PatchSet& patches, const OutputRequest& request);

}  // namespace npufuse::apply
