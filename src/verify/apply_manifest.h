#pragma once
// What `npufuse apply --out DIR` leaves for `npufuse verify DIR`:
// DIR/npufuse-apply.json with the plan (absolute path), the model paths
// as given to apply (empty: the plan's), the folder apply ran in and the
// candidate ids applied. Candidate ids name files as the paths spell them, so
// the analysis is run again on those spellings, from that folder.
#include <string>
#include <vector>

namespace npufuse::verify {

struct ApplyManifest {
  std::string plan;
  std::vector<std::string> paths;
  std::vector<std::string> applied;
  std::string cwd;  // absolute; empty in a manifest written before it was recorded (its paths are absolute)
};

inline constexpr const char* kApplyManifestName = "npufuse-apply.json";

// Returns the manifest's path.
std::string write_apply_manifest(const std::string& out_dir, const ApplyManifest& manifest);
// Throws FileError when DIR has no manifest or it is malformed (naming file:line:col).
ApplyManifest read_apply_manifest(const std::string& dir);

}  // namespace npufuse::verify
