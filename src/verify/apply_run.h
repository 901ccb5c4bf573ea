#pragma once
// `npufuse apply` without --verify still runs what it changed before calling
// a candidate applied: the patched file must load, and each changed function
// must run on the shapes the plan knows with the stand-in torch_npu operators
// (its harness's function cut, docs/apply.md "Run before written"). A
// candidate whose patched side fails, or computes something else, is taken
// out of the set and said why; one whose function cannot be cut out stays
// applied, said as not run.
#include <string>
#include <vector>

#include "apply/patch_plan.h"

namespace npufuse::verify {

struct RunOutcome {
  std::string candidate;
  enum class Kind { ran, not_run, broken } kind = Kind::not_run;
  std::string words;  // what ran and its numbers, why it did not run, or how it failed
};

struct RunRequest {
  apply::PatchRequest patch;
  std::string python;        // interpreter; empty: $NPUFUSE_PYTHON, else /usr/bin/python3
  std::string work_dir;      // trial copies and harnesses (a temporary folder when empty)
  int timeout_seconds = 300;
};

// Runs every applied candidate of `set` inside the whole patched set. Returns
// one outcome per candidate of set.applied.
std::vector<RunOutcome> run_applied(const RunRequest& request, const apply::PatchSet& set);

}  // namespace npufuse::verify
