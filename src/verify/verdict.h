#pragma once
// What verify found for one candidate, and for the run as a whole: the data
// behind the verification report and the optimisation report
// (verify_report.h renders both; docs/verify.md gives the JSON schema).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "verify/exercised.h"
#include "verify/harness_spec.h"
#include "verify/result_reader.h"

namespace npufuse::verify {

struct AlternativeNote {
  std::string id;
  std::string plan_status;
  std::string outcome;  // tried and what happened, or why it was not tried
};

struct CandidateVerdict {
  std::string id, rule, plan_status;
  std::vector<std::string> apis;
  bool applied = false;                 // apply made an edit for it
  std::vector<std::string> manual;      // apply's manual steps for it ("file:line: what")
  std::vector<std::string> refactors;   // refactors its rewrite made on the way (a config branch folded), same form
  std::vector<std::string> assumed;     // error constraints it was applied without (facts not given), same form
  std::vector<std::string> checked;     // prerequisites the model's code shows met (a causal bool buffer), same form
  std::string harness;                  // the generated harness file
  HarnessSpec spec;
  CheckResult precision;                // the harness result
  std::optional<CheckResult> model_check;  // the model-level check of the file with this candidate in
  std::string diff;                     // this candidate's patch alone
  // The lines its edits put into the trial copy, and whether a passing check
  // ran them: "function cut", "model check", "function cut and model check",
  // or "" (not_run then lists the spans no passing check ran).
  std::vector<ChangedSpan> changed;
  std::string exercised_by;
  std::vector<ChangedSpan> not_run;
  // passed | failed | kept | rolled_back | manual | not_exercised (the rule's own
  // search vs replace passed, but no passing check ran the patched lines)
  std::string status;
  std::string conclusion;               // one sentence, with the numbers or the error
  std::vector<AlternativeNote> alternatives;
};

struct RunSettings {
  std::string mode;   // "verify" | "apply --verify"
  std::string plan;
  std::string device;  // cpu | npu | auto, as asked
  int64_t batch = 1, seq = 16;
  std::string dtype;
};

struct VerifyReport {
  RunSettings settings;
  std::vector<CandidateVerdict> candidates;
  std::optional<CheckResult> model_check;  // the whole patched model (verify) or the kept set (apply --verify)
  std::vector<std::string> written;        // files written (patched copies, diff, harnesses)
  std::vector<std::string> notes;

  bool all_passed() const;  // every verified candidate and the model check passed (manual ones aside)
};

}  // namespace npufuse::verify
