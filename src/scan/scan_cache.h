#pragma once
// The incremental cache of a tree scan: one entry per model result, named by
// a key that changes whenever anything the result depends on changes, so an
// entry is never stale, only unused. The key is the sha256 of
//   - the tool version,
//   - the rules and catalog fingerprint (SharedInputs::fingerprint),
//   - the analysis flags, the plan language and the deployment file's bytes,
//   - the model folder's path, and the name and bytes of every *.py in it
//     and of the config.json it uses.
// Entries live in <cache>/<first two hex digits>/<key>.json; failed models
// are cached too, so an unchanged broken file is reported without a re-parse.
#include <optional>
#include <string>

#include "scan/model_folders.h"
#include "scan/model_result.h"
#include "scan/scan_options.h"

namespace npufuse::scan {

// Throws FileError when a file of the folder cannot be read.
std::string cache_key(const ModelFolder& folder, const ScanOptions& options, const std::string& inputs_fingerprint);

class ScanCache {
 public:
  explicit ScanCache(std::string dir) : dir_(std::move(dir)) {}

  // The stored result (with from_cache set), or nothing on a miss or an
  // unreadable entry (which is then re-analysed and overwritten).
  std::optional<ModelResult> load(const std::string& key) const;
  // Best effort: a cache that cannot be written only costs speed next time.
  void store(const std::string& key, const ModelResult& result) const;

 private:
  std::string path_of(const std::string& key) const;
  std::string dir_;
};

}  // namespace npufuse::scan
