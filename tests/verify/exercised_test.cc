// Which lines of a trial copy a candidate's edits occupy, and whether a
// check's recorded lines ran them: what "kept" rests on (docs/verify.md).
#include "verify/exercised.h"

#include <gtest/gtest.h>

#include "verify/candidate_check.h"

namespace npufuse::verify {
namespace {

apply::PatchSet one_file(const std::string& original, std::vector<apply::Edit> edits) {
  apply::PatchedFile f;
  f.path = "m.py";
  f.original = original;
  f.edits = apply::sorted_edits(std::move(edits));
  f.patched = apply::apply_edits(original, f.edits);
  apply::PatchSet set;
  set.files.push_back(f);
  return set;
}

CheckResult ran(const std::string& copy, std::vector<int> lines, bool passed = true) {
  CheckResult r;
  r.passed = passed;
  r.data = {{"lines_run", {{copy, lines}}}};
  return r;
}

const std::string kSource =
    "import torch\n"                  // 1
    "\n"                              // 2
    "def norm(x, w):\n"               // 3
    "    v = x.pow(2).mean(-1)\n"     // 4
    "    return w * x * v.rsqrt()\n"  // 5
    "\n"                              // 6
    "def rope(q, c, s):\n"            // 7
    "    return q * c + q * s\n";     // 8

TEST(ChangedSpans, LinesAreCountedInThePatchedCopyAfterEarlierEditsAddLines) {
  size_t body = kSource.find("    v = x");
  size_t body_end = kSource.find("\n\ndef rope");
  size_t rope = kSource.find("    return q * c");
  apply::PatchSet set = one_file(kSource, {
      {"m.py", 0, 0, "import torch_npu\n", ""},
      {"m.py", static_cast<uint32_t>(body), static_cast<uint32_t>(body_end),
       "    # fused\n    return torch_npu.npu_rms_norm(x, w)[0]", "norm@m.py:4"},
      {"m.py", static_cast<uint32_t>(rope), static_cast<uint32_t>(kSource.size() - 1),
       "    out = torch_npu.npu_rotary_mul(q, c, s)\n    return out", "rope@m.py:8"},
  });
  std::map<std::string, std::string> copies = {{"m.py", "/tmp/out/m.py"}};
  std::vector<ChangedSpan> norm = changed_spans(set, copies, "norm@m.py:4");
  ASSERT_EQ(norm.size(), 1u);
  EXPECT_EQ(norm[0].copy, "/tmp/out/m.py");
  // One line was added above (the import); the comment line is not code but
  // sits inside the span, which starts at the edit's first non-blank byte.
  EXPECT_EQ(norm[0].first, 5);
  EXPECT_EQ(norm[0].last, 6);
  std::vector<ChangedSpan> rope_spans = changed_spans(set, copies, "rope@m.py:8");
  ASSERT_EQ(rope_spans.size(), 1u);
  EXPECT_EQ(rope_spans[0].first, 9);
  EXPECT_EQ(rope_spans[0].last, 10);
  EXPECT_TRUE(changed_spans(set, copies, "other@m.py:1").empty());
}

TEST(ChangedSpans, AnEditWithNoCodeHasNoSpan) {
  size_t body = kSource.find("    v = x");
  apply::PatchSet set = one_file(kSource, {{"m.py", static_cast<uint32_t>(body), static_cast<uint32_t>(body),
                                            "    # nothing to run here\n", "c@m.py:4"}});
  EXPECT_TRUE(changed_spans(set, {{"m.py", "m2.py"}}, "c@m.py:4").empty());
}

TEST(SpansNotRun, ASpanRunsWhenAnyOfItsLinesRan) {
  std::vector<ChangedSpan> spans = {{"/tmp/out/m.py", 5, 6}, {"/tmp/out/m.py", 9, 10}};
  EXPECT_TRUE(spans_not_run(spans, ran("/tmp/out/m.py", {1, 6, 10})).empty());
  std::vector<ChangedSpan> missing = spans_not_run(spans, ran("/tmp/out/m.py", {1, 5}));
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].first, 9);
  EXPECT_EQ(spans_words(missing), "m.py:9-10");
  // Lines of another file say nothing about this one.
  EXPECT_EQ(spans_not_run(spans, ran("/tmp/elsewhere/m.py", {5, 6, 9, 10})).size(), 2u);
  // A check that recorded nothing ran nothing.
  EXPECT_EQ(spans_not_run(spans, CheckResult{}).size(), 2u);
}

TEST(JudgeExercise, OnlyPassingChecksCountAndTheirLinesAddUp) {
  CandidateVerdict v;
  v.changed = {{"/tmp/out/m.py", 5, 6}, {"/tmp/out/m.py", 20, 22}};
  v.precision = ran("/tmp/out/m.py", {5});  // the function cut ran the forward's edit
  CheckResult model = ran("/tmp/out/m.py", {21});  // the model check ran the __init__ edit too
  EXPECT_TRUE(judge_exercise(v, &model));
  EXPECT_EQ(v.exercised_by, "function cut and model check");
  EXPECT_TRUE(v.not_run.empty());

  CheckResult failed_model = ran("/tmp/out/m.py", {5, 21}, /*passed=*/false);
  EXPECT_FALSE(judge_exercise(v, &failed_model));
  EXPECT_EQ(v.exercised_by, "function cut");
  ASSERT_EQ(v.not_run.size(), 1u);
  EXPECT_EQ(v.not_run[0].first, 20);

  CheckResult skipped = ran("/tmp/out/m.py", {5, 21});
  skipped.data["skipped"] = "no model entry";
  EXPECT_FALSE(judge_exercise(v, &skipped));

  // The rule cut records no lines: a passing rule cut alone exercises nothing.
  v.precision = CheckResult{};
  v.precision.passed = true;
  EXPECT_FALSE(judge_exercise(v, nullptr));
  EXPECT_EQ(v.exercised_by, "");
  EXPECT_NE(not_exercised_words(v).find("rule verified, patch not exercised"), std::string::npos);
}

}  // namespace
}  // namespace npufuse::verify
