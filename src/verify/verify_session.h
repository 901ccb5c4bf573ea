#pragma once
// Everything one verify run shares: the plan read back and checked against
// the sources, the analysis it records run again (apply::reanalyse), the
// python/ folder, and the settings. It builds a candidate's harness spec,
// writes and runs the harness, and runs the model-level check.
#include <map>
#include <string>
#include <vector>

#include "apply/patch_plan.h"
#include "verify/result_reader.h"
#include "verify/verdict.h"

namespace npufuse::verify {

struct VerifyOptions {
  std::string plan_path;
  std::vector<std::string> paths;  // model files; empty: the plan's
  std::vector<std::string> only;   // candidate ids; empty: every applicable one
  std::string out_dir;             // harnesses, patched copies, reports
  std::string device = "auto";     // cpu | npu | auto
  int64_t batch = 1, seq = 16;
  std::string dtype;               // empty: the plan's dtype fact (float32 when it has none)
  int timeout_seconds = 600;       // per Python run
  std::string python_dir;          // empty: found (python_dir.h)
  std::string python;              // interpreter (--python); empty: $NPUFUSE_PYTHON, else /usr/bin/python3
  std::string entry;               // --entry module:callable for the model check; empty: found from the code
  int64_t max_elements = 50'000'000;  // input elements a CPU harness may build
};

// The statuses whose rewrite a verify run tries: candidate and
// candidate_with_prerequisites.
bool applicable_status(plan::Status s);

class VerifySession {
 public:
  explicit VerifySession(VerifyOptions options);

  const VerifyOptions& options() const { return options_; }
  const plan::Plan& recorded() const { return recorded_; }
  const apply::Reanalysis& analysis() const { return analysis_; }
  const std::string& python_dir() const { return python_dir_; }
  std::string dtype() const;

  // The recorded candidates apply would try (candidate, candidate_with_prerequisites), in plan order.
  std::vector<const plan::Candidate*> applicable() const;
  // The re-run's candidate with this id (it carries the source ranges and bindings).
  const plan::Candidate* located(const std::string& id) const;

  // patched: original path (as loaded) -> patched copy holding this
  // candidate's edit; empty when apply made none (the rule cut is used).
  HarnessSpec spec_for(const plan::Candidate& c, const std::map<std::string, std::string>& patched) const;
  CheckResult run_harness(const HarnessSpec& spec, const std::string& harness_path) const;
  // Original model file vs its patched copy; skipped (data.skipped) when the
  // plan has no config, and when the model cannot be built and run on this
  // machine (the process was killed, out of memory most likely, or timed
  // out): that reason then stands for every later call without a new run.
  CheckResult run_model_check(const std::string& original, const std::string& patched) const;

  // apply's patches for exactly these ids, written as copies under dir;
  // returns original path -> copy.
  std::map<std::string, std::string> write_copies(const apply::PatchSet& set, const std::string& dir) const;
  apply::PatchSet patches_for(const std::vector<std::string>& ids) const;

  CandidateVerdict start_verdict(const plan::Candidate& recorded) const;
  // The Python that runs the harnesses and the model check.
  std::string interpreter() const;

 private:
  std::string rule_copy(const rules::Rule& rule) const;

  VerifyOptions options_;
  plan::Plan recorded_;
  apply::Reanalysis analysis_;
  std::string python_dir_;
  mutable std::string model_check_unavailable_;  // why the whole model cannot be checked here, once seen
};

// "norm.rms_norm@tests/models/x/model.py:52" -> "norm.rms_norm_model.py_52"-like file stem.
std::string file_stem_for(const std::string& candidate_id);

}  // namespace npufuse::verify
