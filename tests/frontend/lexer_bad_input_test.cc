// Inputs that must fail cleanly (or succeed) without crashing: binary
// garbage, absurd nesting, very long lines.
#include <gtest/gtest.h>

#include <string>

#include "frontend/lexer.h"

namespace npufuse::frontend {
namespace {

std::string error_of(std::string code) {
  try {
    tokenize(SourceFile("bad.py", std::move(code)));
  } catch (const SyntaxError& e) {
    return e.what();
  }
  return "no error";
}

TEST(LexerBadInputTest, NonUtf8FileIsRejectedWithPosition) {
  EXPECT_EQ(error_of("x = 1\ny = '\xff'\n"),
            "bad.py:2:6: invalid UTF-8: byte 0xff cannot start or continue a character (only UTF-8 source is "
            "supported)");
  EXPECT_NE(error_of("# caf\xe9 latin-1\n").find("bad.py:1:6: invalid UTF-8"), std::string::npos);
  EXPECT_NE(error_of("\xed\xa0\x80\n").find("invalid UTF-8"), std::string::npos);  // encoded surrogate
  EXPECT_NE(error_of("\xc0\xaf\n").find("invalid UTF-8"), std::string::npos);      // overlong
  EXPECT_NE(error_of("'\xe4\xb8'").find("invalid UTF-8"), std::string::npos);      // truncated
}

TEST(LexerBadInputTest, NulBytesAreRejected) {
  EXPECT_EQ(error_of(std::string("x = 1\nab\0c\n", 11)), "bad.py:2:3: source code cannot contain null bytes");
}

TEST(LexerBadInputTest, DeepNestingErrorsInsteadOfCrashing) {
  for (char open : {'(', '[', '{'}) {
    std::string code(10000, open);
    EXPECT_EQ(error_of(code), "bad.py:1:201: too many nested parentheses");
  }
  std::string fstrings;
  for (int i = 0; i < 10000; ++i) fstrings += "f'{";
  EXPECT_NE(error_of(fstrings).find("too many nested"), std::string::npos);
}

TEST(LexerBadInputTest, TenMegabyteSingleLineLexes) {
  std::string code = "x = [";
  while (code.size() < 10 * 1024 * 1024) code += "123, 'abc', name, ";
  code += "]";
  SourceFile src("big.py", code);
  auto tokens = tokenize(src);
  EXPECT_GT(tokens.size(), 2'000'000u);
  EXPECT_EQ(tokens.back().kind, TokenKind::EndMarker);
  EXPECT_EQ(tokens.back().end, code.size());
}

TEST(LexerBadInputTest, RandomControlCharactersAreReported) {
  EXPECT_EQ(error_of("x = \x01\n"), "bad.py:1:5: invalid non-printable character U+0001");
  EXPECT_EQ(error_of("x = \x7f\n"), "bad.py:1:5: invalid non-printable character U+007F");
}

}  // namespace
}  // namespace npufuse::frontend
