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

// The recorded plan's analysis run again over `paths` (empty: the plan's
// own), after checking that no file changed since (ApplyError naming it).
// The paths may spell the plan's files another way (relative, absolute,
// through a symlink: apply/plan_paths.h); the re-run's candidate ids are
// then spelt as the plan's, so its ids find them. The config, deployment
// file and rules and catalog folders `recorded` names are pointed at where
// they are found from here, for the steps after it (verify's model check
// builds the model from that config).
Reanalysis reanalyse_plan(plan::Plan& recorded, const std::string& plan_path, const std::vector<std::string>& paths);

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

// --only's ids as the plan spells them: each may spell its file another way
// (`norm.rms_norm@m.py:52` for the plan's `norm.rms_norm@/abs/m.py:52`,
// apply/plan_paths.h). Throws ApplyError for an id the plan does not hold,
// naming the closest one.
std::vector<std::string> plan_ids(const plan::Plan& recorded, const std::string& plan_path,
                                  const std::vector<std::string>& paths, const std::vector<std::string>& ids);

}  // namespace npufuse::apply
