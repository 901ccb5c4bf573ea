#pragma once
// What a scan knows about one model folder after its turn.
#include <string>
#include <vector>

namespace npufuse::scan {

// What the summary reads of one candidate of the plan.
struct CandidateSummary {
  std::string module;
  std::string api;  // its APIs joined by "+", "-" when it has none
  std::string status;
};

struct ModelResult {
  std::string name;         // the folder's name relative to the scan root
  bool failed = false;      // true: `error` says why, the plans are empty
  bool from_cache = false;  // true: read back from the cache, not analysed this run
  std::string plan_json;    // the JSON plan as written (docs/analyze-schema.md)
  std::string markdown;     // the Markdown plan
  std::vector<CandidateSummary> candidates;  // the plan's candidates, in plan order
  std::string error;        // "file:line:col: message" where the input names a place
};

}  // namespace npufuse::scan
