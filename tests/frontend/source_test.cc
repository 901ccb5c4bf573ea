#include "frontend/source.h"

#include <gtest/gtest.h>

namespace npufuse::frontend {
namespace {

void expect_pos(const SourceFile& src, uint32_t offset, int line, int col) {
  LineCol lc = src.line_col(offset);
  EXPECT_EQ(lc.line, line) << "offset " << offset;
  EXPECT_EQ(lc.col, col) << "offset " << offset;
}

TEST(SourceFileTest, LfLineIndex) {
  SourceFile src("a.py", "ab\ncd\n");
  expect_pos(src, 0, 1, 0);
  expect_pos(src, 2, 1, 2);  // the line end belongs to its line
  expect_pos(src, 3, 2, 0);
  expect_pos(src, 6, 3, 0);  // end of file after a final newline: CPython's ENDMARKER line
  EXPECT_EQ(src.line_count(), 3);
  EXPECT_EQ(src.line_start(2), 3u);
}

TEST(SourceFileTest, CrLfCountsAsOneLineEnd) {
  SourceFile src("a.py", "ab\r\ncd");
  expect_pos(src, 3, 1, 3);  // the LF of CRLF is still line 1
  expect_pos(src, 4, 2, 0);
  expect_pos(src, 6, 2, 2);
  EXPECT_EQ(src.line_count(), 2);
}

TEST(SourceFileTest, LoneCrEndsALine) {
  SourceFile src("a.py", "a\rb\rc");
  expect_pos(src, 2, 2, 0);
  expect_pos(src, 4, 3, 0);
  EXPECT_EQ(src.line_start(3), 4u);
}

TEST(SourceFileTest, BomIsStrippedAndRemembered) {
  SourceFile src("a.py", "\xEF\xBB\xBFx = 1\n");
  EXPECT_EQ(src.text(), "x = 1\n");
  EXPECT_EQ(src.bom_length(), 3u);
  expect_pos(src, 0, 1, 0);
  SourceFile plain("b.py", "x\n");
  EXPECT_EQ(plain.bom_length(), 0u);
}

TEST(SourceFileTest, ColumnsAreUtf8Bytes) {
  SourceFile src("a.py", "\xC3\xA9t\xC3\xA9 = 1\n");  // "été = 1"
  expect_pos(src, 5, 1, 5);  // after three characters, five bytes
}

TEST(SourceFileTest, EmptyFile) {
  SourceFile src("a.py", "");
  expect_pos(src, 0, 1, 0);
  EXPECT_EQ(src.line_count(), 1);
  EXPECT_EQ(src.line_start(5), 0u);  // past the end clamps to the end
}

TEST(SourceFileTest, OffsetsPastTheEndClamp) {
  SourceFile src("a.py", "ab");
  expect_pos(src, 100, 1, 2);
}

}  // namespace
}  // namespace npufuse::frontend
