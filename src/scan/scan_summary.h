#pragma once
// The summary of a tree scan: which models have which fusion opportunities
// and how far each got. An opportunity is a module and the torch_npu API(s)
// a candidate would call ("norm / npu_rms_norm"); candidates that no fused
// operator covers are the module with API "-". A model's cell holds the best
// status its candidates of that opportunity reach (candidate, then
// candidate_with_prerequisites, not_applicable, no_fused_op) and how many
// candidates there are. Failed models are listed with their error.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "scan/model_result.h"

namespace npufuse::scan {

struct ScanCounts {
  size_t models = 0;
  size_t analysed = 0;  // analysed in this run (failed or not)
  size_t cached = 0;    // read back from the cache (failed or not)
  size_t failed = 0;
};

// What the summary keeps of one model: its state, candidates per status and
// per opportunity, or its error. Made as soon as the model is done, so that a
// scan of a thousand models never holds a thousand plans.
nlohmann::json model_row(const ModelResult& result);

// A plan's candidates as the summary reads them (ModelResult::candidates).
std::vector<CandidateSummary> summarise_candidates(const plan::Plan& plan);

ScanCounts count_rows(const std::vector<nlohmann::json>& rows);

// `rows` sorted by model name. The JSON form is described in docs/scan.md;
// the Markdown is rendered from it, so both always agree.
nlohmann::json summary_json(const std::string& root, const std::vector<nlohmann::json>& rows);
// In English, or in Chinese with lang "zh" (the plans' --lang).
std::string summary_markdown(const nlohmann::json& summary, const std::string& lang = "en");

}  // namespace npufuse::scan
