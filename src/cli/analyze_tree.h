#pragma once
// `npufuse analyze DIR` when DIR holds several model folders (src/scan/,
// docs/scan.md): every model analysed in parallel, a plan per model under
// --out, the summary on stdout (or -o FILE) and in --out.
#include <string>

#include "plan/plan.h"

namespace npufuse::cli {

struct TreeCliOptions {
  unsigned jobs = 0;         // --jobs; 0: one per core
  std::string out_dir = "npufuse-scan";
  std::string cache_dir;     // --cache; empty: <out>/.npufuse-cache
  bool no_cache = false;
  bool no_progress = false;
};

// Exit 0 when every model was analysed, 1 when some failed (each reported on
// stderr as file:line:col: message, the rest still analysed and written), 2
// for a usage error or when the scan itself could not run.
int run_analyze_tree(const plan::AnalyzeOptions& analysis, const std::string& format, const std::string& lang,
                     const std::string& summary_file, const TreeCliOptions& tree);

}  // namespace npufuse::cli
