// Diffs are checked by `git apply` itself: each one must apply to the
// original and give exactly the patched bytes.
#include <gtest/gtest.h>

#include "apply/unified_diff.h"
#include "apply_test_support.h"

namespace npufuse::apply {
namespace {

using testing::ScratchDir;
using testing::shell;

std::string numbered_lines(int n) {
  std::string out;
  for (int i = 1; i <= n; ++i) out += "line" + std::to_string(i) + "\n";
  return out;
}

uint32_t offset_of(const std::string& text, const std::string& what) { return static_cast<uint32_t>(text.find(what)); }

// Applies `diff` with git in a scratch repository holding `original` and
// returns the result ("<git apply failed>" when git refuses it).
std::string git_applied(const std::string& original, const std::string& diff) {
  ScratchDir dir("diff");
  write_file_atomic(dir.file("m.py"), original);
  write_file_atomic(dir.file("patch.diff"), diff);
  std::string cd = "cd '" + dir.path().string() + "' && ";
  if (shell(cd + "git init -q . && git apply --check patch.diff && git apply patch.diff") != 0) return "<git apply failed>";
  return read_file(dir.file("m.py"));
}

void expect_git_agrees(const std::string& original, std::vector<Edit> edits) {
  edits = sorted_edits(std::move(edits));
  std::string diff = unified_diff("m.py", original, edits);
  ASSERT_FALSE(diff.empty());
  EXPECT_EQ(git_applied(original, diff), apply_edits(original, edits)) << diff;
}

TEST(UnifiedDiff, NoEditsNoDiff) { EXPECT_EQ(unified_diff("m.py", "x\n", {}), ""); }

TEST(UnifiedDiff, OneEditHasThreeLinesOfContextAndExactHeader) {
  std::string text = numbered_lines(10);
  uint32_t at = offset_of(text, "line5");
  std::string diff = unified_diff("m.py", text, {Edit{"m.py", at, at + 5, "five\nand a half", "c"}});
  EXPECT_EQ(diff,
            "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -2,7 +2,8 @@\n line2\n line3\n line4\n-line5\n+five\n"
            "+and a half\n line6\n line7\n line8\n");
  expect_git_agrees(text, {Edit{"m.py", at, at + 5, "five\nand a half", "c"}});
}

TEST(UnifiedDiff, NearbyEditsShareAHunkAndDistantOnesDoNot) {
  std::string text = numbered_lines(40);
  uint32_t a = offset_of(text, "line3\n"), b = offset_of(text, "line6\n"), c = offset_of(text, "line30\n");
  std::vector<Edit> edits = sorted_edits({Edit{"m.py", a, a + 5, "THREE", ""}, Edit{"m.py", b, b + 5, "SIX", ""},
                                          Edit{"m.py", c, c + 6, "THIRTY", ""}});
  std::string diff = unified_diff("m.py", text, edits);
  size_t hunks = 0;
  for (size_t at = diff.find("\n@@ "); at != std::string::npos; at = diff.find("\n@@ ", at + 1)) ++hunks;
  EXPECT_EQ(hunks, 2u) << diff;
  expect_git_agrees(text, edits);
}

TEST(UnifiedDiff, InsertionAtALineStartRemovesNothing) {
  std::string text = "import torch\n\nx = 1\n";
  uint32_t at = offset_of(text, "\nx = 1") + 1;
  std::string diff = unified_diff("m.py", text, {Edit{"m.py", 13, 13, "import torch_npu\n", ""}});
  EXPECT_EQ(diff.find("\n-", diff.find("@@")), std::string::npos) << diff;
  expect_git_agrees(text, {Edit{"m.py", 13, 13, "import torch_npu\n", ""}, Edit{"m.py", at, at + 5, "x = 2", "c"}});
}

// An edit that rewrites a line as it was (a keyword inserted after
// `**kwargs,` by replacing that text) shows the line as context.
TEST(UnifiedDiff, LinesAnEditLeavesAsTheyWereAreContext) {
  std::string text = "f(\n    a,\n    **kwargs,\n)\n";
  uint32_t at = offset_of(text, "    **kwargs,\n");
  Edit e{"m.py", at, at + 14, "    **kwargs,\n    extra=extra,\n", ""};
  std::string diff = unified_diff("m.py", text, {e});
  EXPECT_EQ(diff.find("-    **kwargs,"), std::string::npos) << diff;
  EXPECT_NE(diff.find("\n     **kwargs,\n+    extra=extra,\n"), std::string::npos) << diff;
  expect_git_agrees(text, {e});
  // An edit that changes nothing gives no diff.
  EXPECT_EQ(unified_diff("m.py", text, {Edit{"m.py", at, at + 14, "    **kwargs,\n", ""}}), "");
}

TEST(UnifiedDiff, FileWithoutFinalNewline) {
  std::string text = "a = 1\nb = 2";
  std::string diff = unified_diff("m.py", text, {Edit{"m.py", 10, 11, "3", "c"}});
  EXPECT_NE(diff.find("\\ No newline at end of file"), std::string::npos) << diff;
  expect_git_agrees(text, {Edit{"m.py", 10, 11, "3", "c"}});
  expect_git_agrees(text, {Edit{"m.py", 0, 0, "import torch_npu\n", ""}, Edit{"m.py", 11, 11, "\n", "c"}});
}

TEST(UnifiedDiff, CrlfLinesKeepTheirEnds) {
  std::string text = "a = 1\r\nb = 2\r\nc = 3\r\n";
  expect_git_agrees(text, {Edit{"m.py", 11, 12, "20", "c"}});
}

}  // namespace
}  // namespace npufuse::apply
