#include "verify/apply_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "verify/candidate_check.h"
#include "verify/verify_session.h"

namespace npufuse::verify {
namespace {

namespace fs = std::filesystem;

std::string temporary_folder() {
  std::random_device rd;
  fs::path dir = fs::temp_directory_path() / fmt::format("npufuse-apply-run-{:08x}", rd());
  fs::create_directories(dir);
  return dir.string();
}

}  // namespace

std::vector<RunOutcome> run_applied(const RunRequest& request, const apply::PatchSet& set) {
  std::vector<RunOutcome> out;
  if (set.applied.empty()) return out;
  bool own_dir = request.work_dir.empty();
  VerifyOptions options;
  options.plan_path = request.patch.plan_path;
  options.paths = request.patch.paths;
  options.device = "cpu";
  options.python = request.python;
  options.timeout_seconds = request.timeout_seconds;
  options.out_dir = own_dir ? temporary_folder() : request.work_dir;
  VerifySession session(options);
  for (const std::string& id : set.applied) {
    RunOutcome o{id};
    const plan::Candidate* recorded = nullptr;
    for (const plan::Candidate* c : session.applicable())
      if (c->id == id) recorded = c;
    if (!recorded) {
      o.words = "not found among the plan's applicable candidates";
      out.push_back(o);
      continue;
    }
    // This candidate with every other one applied: the file as it will be written.
    std::vector<std::string> others;
    for (const std::string& other : set.applied)
      if (other != id) others.push_back(other);
    CandidateRun run = check_candidate(session, *recorded, others, options.out_dir);
    const CheckResult& r = run.verdict.precision;
    bool function_cut = r.text("cut").rfind("function ", 0) == 0;
    bool patched_failed = r.data.is_object() && r.data.value("patched_failed", false);
    if (patched_failed) {
      o.kind = RunOutcome::Kind::broken;
      o.words = "the patched code fails: " + r.error;
    } else if (function_cut && r.error.empty() && !r.passed) {
      o.kind = RunOutcome::Kind::broken;
      o.words = "the patched function computes something else: " + precision_words(r);
    } else if (function_cut && r.error.empty() && judge_exercise(run.verdict, nullptr)) {
      o.kind = RunOutcome::Kind::ran;
      o.words = fmt::format("the patched {} ran ({}) with the stand-in torch_npu: {}", r.text("cut"),
                            spans_words(run.verdict.changed), precision_words(r));
    } else {
      std::string why = !r.error.empty() ? r.error
                        : !r.text("cut_note").empty() ? r.text("cut_note")
                        : !run.verdict.spec.cut_note.empty() ? run.verdict.spec.cut_note
                        : fmt::format("its changed lines {} are outside the function the check calls",
                                      spans_words(run.verdict.not_run));
      o.words = "not run before writing (" + why + "); `apply --verify` checks it in the whole model";
    }
    out.push_back(o);
  }
  if (own_dir) {
    std::error_code ec;
    fs::remove_all(options.out_dir, ec);
  }
  return out;
}

}  // namespace npufuse::verify
