#pragma once
// One candidate through apply and its harness: patched alone (or on top of
// the ones kept so far), its function cut or rule cut run, the numbers read.
// Shared by `verify` and the `apply --verify` loop.
#include <string>
#include <vector>

#include "verify/verify_session.h"

namespace npufuse::verify {

struct CandidateRun {
  CandidateVerdict verdict;
  std::map<std::string, std::string> copies;  // original -> patched copy holding the trial set ({} when not applied)
};

// base: ids already kept (patched together with this one); work_dir: where
// the trial copies and the harness go.
CandidateRun check_candidate(const VerifySession& session, const plan::Candidate& recorded,
                             const std::vector<std::string>& base, const std::string& work_dir);

// Which passing checks ran the candidate's changed lines: sets
// v.exercised_by and v.not_run from the harness (when it passed) and the
// given model check (when it passed). True when every changed span ran.
bool judge_exercise(CandidateVerdict& v, const CheckResult* model_check);

// A sentence with the precision numbers or the error.
std::string precision_words(const CheckResult& r);
std::string model_check_words(const CheckResult& r);
// The conclusion of a candidate whose patched lines no passing check ran.
std::string not_exercised_words(const CandidateVerdict& v);

}  // namespace npufuse::verify
