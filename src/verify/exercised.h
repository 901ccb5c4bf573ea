#pragma once
// Whether a check ran the lines a candidate's patch changed: "kept" means the
// changed code itself ran in a check that passed (docs/verify.md). The Python
// side records the lines of the patched file that ran (`lines_run` in the
// harness's and the model check's JSON); this compares them with the lines
// the candidate's edits put into the trial copy.
#include <map>
#include <string>
#include <vector>

#include "apply/patch_plan.h"
#include "verify/result_reader.h"

namespace npufuse::verify {

// One edit of the candidate, as lines of the patched copy (1-based, inclusive).
struct ChangedSpan {
  std::string copy;  // the patched copy's path
  int first = 0, last = 0;
};

// The spans the candidate's own edits occupy in each patched copy (copies:
// original path as loaded -> copy). Edits that add no code (a deletion, a
// comment) and the shared `import torch_npu` are left out: no line of them can run.
std::vector<ChangedSpan> changed_spans(const apply::PatchSet& set, const std::map<std::string, std::string>& copies,
                                       const std::string& candidate);

// The spans that no line of `r.data.lines_run` falls in (every span when the
// check recorded none for that copy).
std::vector<ChangedSpan> spans_not_run(const std::vector<ChangedSpan>& spans, const CheckResult& r);

// "model.py:12-14, model.py:40" for the report.
std::string spans_words(const std::vector<ChangedSpan>& spans);

}  // namespace npufuse::verify
