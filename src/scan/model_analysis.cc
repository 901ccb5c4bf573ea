#include "scan/model_analysis.h"

#include <exception>

#include "frontend/diagnostic.h"
#include "model/model_config.h"
#include "model/source_set.h"
#include "plan/analyze.h"
#include "report/plan_json.h"
#include "report/plan_markdown.h"
#include "scan/scan_summary.h"

namespace npufuse::scan {

ModelResult analyze_model(const ModelFolder& folder, const ScanOptions& options, const SharedInputs& shared) {
  ModelResult result;
  result.name = folder.name;
  try {
    plan::AnalysisInputs in;
    in.options = options.analysis;
    in.options.paths = folder.model_files;
    if (!folder.config.empty()) in.options.config = folder.config;

    model::SourceSet sources = model::SourceSet::load(in.options.paths);
    model::ModelConfig config;
    if (!in.options.config.empty()) config = model::ModelConfig::load(in.options.config);
    in.sources = &sources;
    in.config = &config;
    in.rules = &shared.rules;
    in.catalog = &shared.catalog;
    in.match_threads = 1;  // the scan runs models in parallel
    in.patterns = shared.patterns;
    in.memo = shared.memo;

    plan::Plan plan = plan::build_plan(in);
    if (plan.tool_version.empty()) plan.tool_version = options.tool_version;
    result.plan_json = report::plan_json_text(plan);
    result.markdown = report::plan_to_markdown(plan, options.lang == "zh" ? report::Lang::Zh : report::Lang::En);
    result.candidates = summarise_candidates(plan);
  } catch (const frontend::SyntaxError& e) {
    result.failed = true;
    result.error = e.diagnostic().format();
  } catch (const std::exception& e) {
    // Errors other than syntax already name their file (and place when known);
    // anything unexpected still costs only this model, never the scan.
    result.failed = true;
    result.error = e.what();
  }
  if (result.failed) {
    result.plan_json.clear();
    result.markdown.clear();
    result.candidates.clear();
  }
  return result;
}

}  // namespace npufuse::scan
