#pragma once
// What a scan knows about one model folder after its turn.
#include <nlohmann/json.hpp>
#include <string>

namespace npufuse::scan {

struct ModelResult {
  std::string name;         // the folder's name relative to the scan root
  bool failed = false;      // true: `error` says why, `plan` is null
  bool from_cache = false;  // true: read back from the cache, not analysed this run
  nlohmann::json plan;      // the JSON plan (docs/analyze-schema.md)
  std::string markdown;     // the Markdown plan
  std::string error;        // "file:line:col: message" where the input names a place
};

}  // namespace npufuse::scan
