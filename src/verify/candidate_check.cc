#include "verify/candidate_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "apply/apply_error.h"
#include "apply/patch_output.h"

namespace npufuse::verify {
namespace {

namespace fs = std::filesystem;

std::string number_text(const std::optional<double>& v) { return v ? fmt::format("{:.3g}", *v) : "n/a"; }

// What let a passing output pass beyond its tolerance (the float32 chain's
// allowance), once per distinct reason: numbers against the low-precision
// chain read wrong without it.
std::string allowances(const CheckResult& r) {
  std::vector<std::string> out;
  if (!r.passed || !r.data.contains("outputs") || !r.data["outputs"].is_array()) return "";
  for (const auto& o : r.data["outputs"]) {
    std::string why = o.is_object() ? o.value("why", "") : "";
    if (why.size() > 2 && why.front() == '(' && why.back() == ')') why = why.substr(1, why.size() - 2);
    if (!why.empty() && std::find(out.begin(), out.end(), why) == out.end()) out.push_back(why);
  }
  return out.empty() ? "" : fmt::format("; {}", fmt::join(out, "; "));
}

}  // namespace

std::string precision_words(const CheckResult& r) {
  if (!r.error.empty()) return "error: " + r.error;
  return fmt::format("{} ({}): max abs {}, max rel {}, cosine {}{}", r.passed ? "within tolerance" : "OUT OF TOLERANCE",
                     r.text("cut"), number_text(r.number("max_abs")), number_text(r.number("max_rel")),
                     r.number("cosine") ? fmt::format("{:.6f}", *r.number("cosine")) : "n/a", allowances(r));
}

std::string model_check_words(const CheckResult& r) {
  if (!r.text("skipped").empty()) return "model check skipped: " + r.text("skipped");
  if (!r.error.empty()) return "model check error: " + r.error;
  std::vector<std::string> parts;
  if (r.data.contains("rows"))
    for (const auto& row : r.data["rows"])
      parts.push_back(fmt::format("{} {} max abs {}", row.value("stage", ""), row.value("what", ""),
                                  row["max_abs"].is_number() ? fmt::format("{:.3g}", row["max_abs"].get<double>()) : "n/a"));
  return fmt::format("model {}: {}", r.passed ? "matches" : "DIFFERS", fmt::join(parts, "; "));
}

bool judge_exercise(CandidateVerdict& v, const CheckResult* model_check) {
  std::vector<std::string> by;
  std::vector<ChangedSpan> left = v.changed;
  // A passing check that ran any of the changed lines is named; the spans
  // still missing after both are what no passing check ran.
  auto take = [&](const CheckResult& r, const char* name) {
    if (!r.passed) return;
    if (spans_not_run(v.changed, r).size() < v.changed.size()) by.push_back(name);
    left = spans_not_run(left, r);
  };
  take(v.precision, "function cut");
  if (model_check && model_check->text("skipped").empty()) take(*model_check, "model check");
  v.exercised_by = fmt::format("{}", fmt::join(by, " and "));
  v.not_run = left;
  return !v.changed.empty() && left.empty();
}

std::string not_exercised_words(const CandidateVerdict& v) {
  std::string why = v.changed.empty() ? "its edit adds no line that runs"
                                      : fmt::format("no passing check ran {}", spans_words(v.not_run));
  return fmt::format("rule verified, patch not exercised ({}); the rule's own check: {}", why,
                     precision_words(v.precision));
}

CandidateRun check_candidate(const VerifySession& session, const plan::Candidate& recorded,
                             const std::vector<std::string>& base, const std::string& work_dir) {
  CandidateRun run;
  CandidateVerdict& v = run.verdict;
  v = session.start_verdict(recorded);
  const plan::Candidate* located = session.located(recorded.id);
  // The files are those the plan was made for (the session checked their
  // hashes), so a candidate the re-run lacks comes from another analysis:
  // an input error, never a manual row.
  if (!located)
    throw apply::ApplyError(fmt::format("{}: candidate '{}' is not found when the plan's analysis is run again (was the "
                                        "plan written by another npufuse version, or with other rules?)",
                                        session.options().plan_path, recorded.id));
  // This candidate's patch alone, for the report.
  apply::PatchSet alone = session.patches_for({recorded.id});
  for (const apply::ManualStep& m : alone.manual)
    if (m.candidate == recorded.id) v.manual.push_back(fmt::format("{}: {}", m.where, m.what));
  for (const apply::ManualStep& r : alone.refactored)
    if (r.candidate == recorded.id) v.refactors.push_back(fmt::format("{}: {}", r.where, r.what));
  for (const apply::ManualStep& r : alone.checked)
    if (r.candidate == recorded.id) v.checked.push_back(fmt::format("{}: {}", r.where, r.what));
  for (const apply::ManualStep& r : alone.assumed)
    if (r.candidate == recorded.id) v.assumed.push_back(fmt::format("{}: {}", r.where, r.what));
  v.applied = std::find(alone.applied.begin(), alone.applied.end(), recorded.id) != alone.applied.end();
  if (v.applied) v.diff = apply::write_patches(alone, {}).diff;

  std::string stem = file_stem_for(recorded.id);
  if (v.applied) {
    std::vector<std::string> trial = base;
    trial.push_back(recorded.id);
    apply::PatchSet set = base.empty() ? alone : session.patches_for(trial);
    if (std::find(set.applied.begin(), set.applied.end(), recorded.id) == set.applied.end()) {
      v.applied = false;
      v.manual.push_back(fmt::format("{}: its edit clashes with a candidate kept before it", recorded.location.file));
    } else {
      run.copies = session.write_copies(set, (fs::path(work_dir) / "patched" / stem).string());
      v.changed = changed_spans(set, run.copies, recorded.id);
    }
  }
  v.spec = session.spec_for(*located, run.copies);
  v.harness = (fs::path(work_dir) / "harness" / (stem + ".py")).string();
  v.precision = session.run_harness(v.spec, v.harness);
  return run;
}

}  // namespace npufuse::verify
