#include "verify/verify_plan.h"

#include <filesystem>

#include "verify/candidate_check.h"

namespace npufuse::verify {

VerifyReport verify_plan(const VerifyOptions& options) {
  namespace fs = std::filesystem;
  VerifySession session(options);
  VerifyReport report;
  report.settings = {"verify", options.plan_path, options.device, options.batch, options.seq, session.dtype()};
  std::vector<std::string> applied;
  for (const plan::Candidate* c : session.applicable()) {
    CandidateRun run = check_candidate(session, *c, {}, options.out_dir);
    CandidateVerdict& v = run.verdict;
    if (v.status.empty()) {
      bool ok = v.precision.passed;
      v.status = !v.applied ? "manual" : ok ? "passed" : "failed";
      v.conclusion = precision_words(v.precision);
      if (!v.applied) v.conclusion = "not applied (see the manual steps); the fusion itself: " + v.conclusion;
    }
    if (v.applied) applied.push_back(v.id);
    report.written.push_back(v.harness);
    report.candidates.push_back(std::move(v));
  }
  if (!applied.empty()) {
    apply::PatchSet all = session.patches_for(applied);
    std::map<std::string, std::string> copies = session.write_copies(all, (fs::path(options.out_dir) / "model").string());
    for (const apply::PatchedFile& f : all.files) {
      if (f.patched == f.original) continue;
      report.model_check = session.run_model_check(f.path, copies[f.path]);
      break;  // the model check builds the model from the file that defines it: the first patched one
    }
    // A candidate passed only where a passing check ran its changed lines:
    // its function cut, or the whole model with every applied edit in.
    for (CandidateVerdict& v : report.candidates) {
      if (v.status != "passed") continue;
      // Its function cut ran its own trial copy; the model check, the copy
      // with every edit (other files, so neither answers for the other's lines).
      bool ran = judge_exercise(v, nullptr);
      if (!ran) {
        v.changed = changed_spans(all, copies, v.id);
        ran = judge_exercise(v, report.model_check ? &*report.model_check : nullptr);
      }
      if (ran) {
        v.conclusion += "; changed lines ran in the " + v.exercised_by;
      } else {
        v.status = "not_exercised";
        v.conclusion = not_exercised_words(v);
      }
    }
  } else {
    report.notes.push_back("apply made no edit, so there is no patched model to compare");
  }
  return report;
}

}  // namespace npufuse::verify
