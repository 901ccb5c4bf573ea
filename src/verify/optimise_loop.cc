#include "verify/optimise_loop.h"

#include <fmt/format.h>

#include <filesystem>

#include "apply/patch_output.h"
#include "util/file_io.h"
#include "verify/candidate_check.h"

namespace npufuse::verify {

VerifyReport optimise(const VerifyOptions& options) {
  namespace fs = std::filesystem;
  VerifySession session(options);
  VerifyReport report;
  report.settings = {"apply --verify", options.plan_path, options.device, options.batch, options.seq, session.dtype()};
  std::string work = (fs::path(options.out_dir) / "verify").string();
  std::vector<std::string> kept;
  // One candidate (or an alternative in its place) patched on top of the
  // kept ones and judged: kept, rolled back with its evidence, or manual.
  auto judge = [&](CandidateRun& run) {
    CandidateVerdict& v = run.verdict;
    if (!v.status.empty()) return;
    report.written.push_back(v.harness);
    if (!v.applied) {
      v.status = "manual";
      v.conclusion = "not applied (see the manual steps); the fusion itself: " + precision_words(v.precision);
      return;
    }
    for (const auto& [original, copy] : run.copies) {
      std::string before = read_file(original), after = read_file(copy);
      if (before != after) {
        v.model_check = session.run_model_check(original, copy);
        break;
      }
    }
    bool model_ok = !v.model_check || v.model_check->passed || !v.model_check->text("skipped").empty();
    bool exercised = judge_exercise(v, v.model_check ? &*v.model_check : nullptr);
    if (v.precision.passed && model_ok && exercised) {
      kept.push_back(v.id);
      v.status = "kept";
      v.conclusion = precision_words(v.precision) + (v.model_check ? "; " + model_check_words(*v.model_check) : "") +
                     "; changed lines ran in the " + v.exercised_by;
    } else if (v.precision.passed && model_ok) {
      // Nothing failed, but nothing that passed ran the patched lines either:
      // the patch is not kept on the rule's word alone.
      v.status = "not_exercised";
      v.conclusion = not_exercised_words(v) + (v.model_check ? "; " + model_check_words(*v.model_check) : "");
    } else {
      v.status = "rolled_back";
      std::vector<std::string> why;
      if (!v.precision.passed) why.push_back("harness: " + precision_words(v.precision));
      if (!model_ok) why.push_back(model_check_words(*v.model_check));
      v.conclusion = fmt::format("rolled back: {}", fmt::join(why, "; "));
    }
  };
  for (const plan::Candidate* c : session.applicable()) {
    CandidateRun run = check_candidate(session, *c, kept, work);
    judge(run);
    CandidateVerdict v = std::move(run.verdict);
    std::vector<CandidateVerdict> tried;
    // The preferred rewrite failed or needs hand work: the plan's other
    // rules for the same chain are tried in its place, in the plan's order,
    // until one is kept.
    if (v.status == "rolled_back" || v.status == "manual" || v.status == "not_exercised") {
      for (size_t i = 0; i < c->alternatives.size(); ++i) {
        const plan::Candidate& alt = c->alternatives[i];
        AlternativeNote* note = i < v.alternatives.size() ? &v.alternatives[i] : nullptr;
        if (note && !applicable_status(alt.status)) continue;
        CandidateRun alt_run = check_candidate(session, alt, kept, work);
        judge(alt_run);
        if (note) note->outcome = "tried in its place: " + alt_run.verdict.status + ": " + alt_run.verdict.conclusion;
        bool alt_kept = alt_run.verdict.status == "kept";
        tried.push_back(std::move(alt_run.verdict));
        if (alt_kept) {
          v.conclusion += fmt::format("; alternative {} kept in its place", alt.id);
          break;
        }
      }
    }
    report.candidates.push_back(std::move(v));
    for (CandidateVerdict& t : tried) report.candidates.push_back(std::move(t));
  }
  if (kept.empty()) {
    report.notes.push_back("no candidate was kept: nothing written under --out besides the report and harnesses");
    return report;
  }
  apply::PatchSet final_set = session.patches_for(kept);
  apply::OutputRequest out;
  out.out_dir = options.out_dir;
  out.diff_file = (fs::path(options.out_dir) / "patch.diff").string();
  apply::Written written = apply::write_patches(final_set, out);
  report.written.insert(report.written.end(), written.files.begin(), written.files.end());
  std::vector<std::string> shown = apply::shown_paths(final_set.files);
  for (size_t i = 0; i < final_set.files.size(); ++i) {
    const apply::PatchedFile& f = final_set.files[i];
    if (f.patched == f.original) continue;
    report.model_check = session.run_model_check(f.path, (fs::path(options.out_dir) / shown[i]).string());
    break;
  }
  return report;
}

}  // namespace npufuse::verify
