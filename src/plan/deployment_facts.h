#pragma once
// The facts the plan checks constraints with, before any match adds its own:
// the config's (model::bind_facts, already named as in catalog/facts.toml),
// the deployment file's and the flags' (flags win, then the file, then the
// config), and the per-rank numbers derived from them (heads per rank =
// num_attention_heads / tp, experts per rank = experts / ep). A per-rank
// fact whose split is not given stays unknown; the hint says what to pass.
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
};

// Throws std::invalid_argument for a flag value the vocabulary does not allow
// ("--chip: 'B9' is not one of 'A2', 'A3', ...").
DeploymentFacts deployment_facts(const std::vector<model::Fact>& config_facts, const std::vector<DeploymentSetting>& file,
                                 const AnalyzeOptions& options, const catalog::FactVocabulary& vocabulary);

// A fact value from config JSON (numbers, strings, booleans); nullopt for objects and null.
std::optional<check::Value> json_fact_value(const nlohmann::json& j);

}  // namespace npufuse::plan
