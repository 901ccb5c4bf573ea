#pragma once
// The facts the plan checks constraints with, before any match adds its own:
// the config's (model::bind_facts, already named as in catalog/facts.toml),
// the deployment file's and the flags' (flags win, then the file, then the
// config), and the per-rank numbers derived from them (heads per rank =
// num_attention_heads / tp, experts per rank = experts / ep). A per-rank
// fact whose split is not given stays unknown; the hint says what to pass.
// One exception: with neither --tp nor a deployment file, the plan assumes
// tp = 1 (one rank holds every head) and says so, because a porting engineer
// first brings the model up on one card and the head checks should answer
// for that; the assumption is listed in the plan (Plan::assumed_facts).
#include <map>
#include <string>
#include <vector>

#include "catalog/fact_vocabulary.h"
#include "check/facts.h"
#include "model/facts.h"
#include "plan/deployment.h"
#include "plan/plan.h"

namespace npufuse::plan {

struct DeploymentFacts {
  check::FactSet facts;
  std::string stage = "both";                 // prefill | decode | both, after --stage and the file
  std::map<std::string, std::string> hints;   // unknown fact -> what would make it known
  std::vector<std::string> assumed;           // facts set by a stated default, not by the user (tp)
};

// Throws std::invalid_argument for a flag value the vocabulary does not allow
// ("--chip: 'B9' is not one of 'A2', 'A3', ...").
DeploymentFacts deployment_facts(const std::vector<model::Fact>& config_facts, const std::vector<DeploymentSetting>& file,
                                 const AnalyzeOptions& options, const catalog::FactVocabulary& vocabulary);

// A fact value from config JSON (numbers, strings, booleans); nullopt for objects and null.
std::optional<check::Value> json_fact_value(const nlohmann::json& j);

}  // namespace npufuse::plan
