#pragma once
// The options of a tree scan (`npufuse analyze DIR` on a folder of models).
#include <string>

#include "plan/plan.h"

namespace npufuse::scan {

struct ScanOptions {
  std::string root;
  // Flags every model is analysed with. `paths` is set per model; `config`
  // is used only by model folders without a config.json of their own.
  plan::AnalyzeOptions analysis;
  std::string lang = "en";     // language of the Markdown plans and summary
  std::string out_dir;         // <model>.plan.json / .md and summary.{md,json}
  std::string cache_dir;       // empty: <out_dir>/.npufuse-cache
  bool use_cache = true;
  unsigned jobs = 0;           // 0: one per hardware core
  std::string tool_version;    // part of every cache key
  bool progress = false;       // draw the progress bar on stderr
};

}  // namespace npufuse::scan
