#pragma once
// A whole-tree scan: find the model folders under the root, analyse each on
// a pool of worker threads (reading unchanged ones back from the cache),
// write `<out>/<model>.plan.json` and `.md` per model and
// `<out>/summary.json` / `summary.md`. A model that fails is a row of the
// summary, never the end of the scan.
#include <nlohmann/json.hpp>
#include <string>

#include "scan/scan_options.h"
#include "scan/scan_summary.h"

namespace npufuse::scan {

struct ScanReport {
  nlohmann::json summary;  // summary_json of every model
  ScanCounts counts;
  double seconds = 0;      // wall time of discovery, analysis and writing
};

// The cache folder the options name, or the default under the output folder.
std::string cache_dir_of(const ScanOptions& options);

// Throws FileError when the root is not a directory or the output cannot be
// written, std::invalid_argument when no model folder lies below the root,
// and rules::RuleError / catalog::CatalogError for broken --rules/--catalog.
ScanReport run_tree_scan(const ScanOptions& options);

}  // namespace npufuse::scan
