#pragma once
// Workflow step 5, first half: from a plan to patched sources. The plan is
// checked against the sources (hashes), the analysis it records is run again
// to locate each chosen candidate's chain, and each chain becomes an edit or
// a manual step. Nothing is written here (see patch_output.h).
#include <string>
#include <vector>

#include "apply/edits.h"
#include "model/model_config.h"
#include "plan/plan.h"
#include "rules/ruleset.h"

namespace npufuse::apply {

struct PatchRequest {
  std::string plan_path;
  std::vector<std::string> paths;  // the model files given to apply; empty: the plan's
  std::vector<std::string> only;   // candidate ids; empty: every applicable candidate
};

// Something a person has to do, and where.
struct ManualStep {
  std::string candidate;
  std::string where;  // file:line
  std::string what;
};

struct PatchedFile {
  std::string path;       // as the analysis loaded it
  std::string original;   // the file's bytes
  std::string patched;    // the same with the edits (equal when none)
  std::vector<Edit> edits;  // sorted; offsets into `original` (the file's bytes)
};

struct PatchSet {
  std::vector<PatchedFile> files;        // every analysed file, in load order
  std::vector<std::string> applied;      // candidate ids that became edits
  std::vector<ManualStep> manual;        // refused chains and non-mechanical prerequisites
  std::vector<ManualStep> refactored;    // mechanical refactors a rewrite made on the way (a config branch folded)
  std::vector<ManualStep> checked;       // prerequisites the model's code shows are met (a causal bool buffer)
  // Applied candidates whose error-severity constraints answered unknown: the
  // facts that decide them, which the engineer still has to confirm.
  std::vector<ManualStep> assumed;
  std::vector<std::string> skipped;      // "id: why" for candidates not chosen
};

// The analysis a plan records, run again over the same bytes; the loaded
// sources and rules stay alive for rewriting and verifying.
struct Reanalysis {
  model::SourceSet sources;
  rules::RuleSet rules;
  plan::Plan plan;
  model::ModelConfig config;  // as loaded with --config; not loaded() without one
};
Reanalysis reanalyse(const plan::AnalyzeOptions& options);

// Throws ApplyError (stale or malformed plan, unknown --only id, edits that
// overlap) and the analysis' own input errors.
//
// As a library (verify, apply --verify): `only = {id}` patches one candidate
// (or one alternative, by its id); the PatchSet's files carry their edits,
// each naming its candidate, and the original bytes, which undo everything.
// To keep some candidates and drop others, call again with `only` set to the
// kept ids: edits of different candidates never overlap, so the result is
// the same edits without the dropped ones. Without `only`, a candidate that
// yields no edit leaves its chain to its applicable alternatives in order.
PatchSet make_patches(const PatchRequest& request);

}  // namespace npufuse::apply
