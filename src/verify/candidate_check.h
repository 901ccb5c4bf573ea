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

// A sentence with the precision numbers or the error.
std::string precision_words(const CheckResult& r);
std::string model_check_words(const CheckResult& r);

}  // namespace npufuse::verify
