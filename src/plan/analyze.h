#pragma once
// Building the plan: load the model files, the config, the rules and the
// catalog, read the model (model/), match every rule on every module's
// inlined forward and on module-level functions (match/), check each match
// against the catalog's constraints with the facts known (check/), decide
// each candidate's status, add no_fused_op items for sub-chains nothing
// covers, and run the step-4 review.
#include <string>
#include <utility>
#include <vector>

#include "catalog/catalog.h"
#include "model/model_config.h"
#include "model/source_set.h"
#include "plan/model_matches.h"
#include "plan/plan.h"
#include "rules/ruleset.h"

namespace npufuse::plan {

struct AnalysisInputs {
  const model::SourceSet* sources = nullptr;
  const model::ModelConfig* config = nullptr;
  const rules::RuleSet* rules = nullptr;
  const catalog::Catalog* catalog = nullptr;
  // `rules` compiled, when the caller analyses many models with one rule
  // set (a tree scan); compiled per analysis when null.
  CompiledPatterns patterns;
  // Walks remembered across the models of a scan, for `patterns` (may be null).
  std::shared_ptr<match::MatchMemo> memo;
  // Workers matching the model's graphs (0: one per core). A tree scan, which
  // analyses several models at once, uses one per model.
  unsigned match_threads = 0;
  AnalyzeOptions options;
};

// Wall time of each stage, for `bench/analyze` and `--timings`; not part of the JSON plan.
struct StageTimes {
  std::vector<std::pair<std::string, double>> ms;  // "load", "model", "match", "check", "review"
  // Of the stages after "load", the time spent reading catalog operator files
  // on demand (the embedded catalog): a one-time load a tree scan pays once.
  double catalog_read_ms = 0;
};

Plan build_plan(const AnalysisInputs& in, StageTimes* times = nullptr);

// Loads everything `options` names (embedded rules/catalog unless overridden)
// and builds the plan. Throws frontend::SyntaxError, FileError,
// rules::RuleError, catalog::CatalogError, or std::invalid_argument for a bad
// flag value or deployment file (naming file:line:col where there is one).
Plan analyze(const AnalyzeOptions& options, StageTimes* times = nullptr);

}  // namespace npufuse::plan
