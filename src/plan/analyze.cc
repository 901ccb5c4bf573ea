#include "plan/analyze.h"

#include "plan/reference_chains.h"
#include "plan/stage_timer.h"

namespace npufuse::plan {

Plan analyze(const AnalyzeOptions& options, StageTimes* times) {
  StageTimer timer(times);
  model::SourceSet sources = model::SourceSet::load(options.paths);
  model::ModelConfig config;
  if (!options.config.empty()) config = model::ModelConfig::load(options.config);
  rules::RuleSet rules =
      options.rules_dir.empty() ? rules::RuleSet::load(rules::embedded_rule_files(), "rules")
                                : rules::RuleSet::load(rules::directory_rule_files(options.rules_dir), options.rules_dir);
  catalog::Catalog catalog = options.catalog_dir.empty()
                                 ? catalog::Catalog::load_on_demand(catalog::embedded_catalog_files(), "catalog")
                                 : catalog::Catalog::load(catalog::directory_catalog_files(options.catalog_dir),
                                                          options.catalog_dir);
  // Compiling the rules' patterns is part of loading them: a tree scan does it
  // once for all its models, so the stages after "load" are the per-model cost.
  CompiledPatterns patterns = compile_patterns(rules);
  // Every plan measures its coverage against the reference chains, which are
  // parsed on first use.
  embedded_reference_chains();
  timer.lap("load");

  AnalysisInputs in;
  in.patterns = std::move(patterns);
  in.sources = &sources;
  in.config = &config;
  in.rules = &rules;
  in.catalog = &catalog;
  in.options = options;
  Plan plan = build_plan(in, times);
  if (times) times->catalog_read_ms = catalog.on_demand_read_ms();
  return plan;
}

}  // namespace npufuse::plan
