#include "frontend/literal.h"

#include <gtest/gtest.h>

#include "frontend/diagnostic.h"
#include "frontend/lexer.h"

namespace npufuse::frontend {
namespace {

struct LiteralCase {
  const char* literal;
  const char* repr;  // CPython's repr() of the literal's value
};

#include "literal_cases.inc"

TEST(LiteralTest, StrReprMatchesCPython) {
  for (const LiteralCase& c : kStrCases) {
    EXPECT_EQ(repr_str(decode_str_literal(c.literal)), c.repr) << c.literal;
  }
}

TEST(LiteralTest, BytesReprMatchesCPython) {
  for (const LiteralCase& c : kBytesCases) {
    EXPECT_EQ(repr_bytes(decode_bytes_literal(c.literal)), c.repr) << c.literal;
  }
}

TEST(LiteralTest, NumberReprMatchesCPython) {
  for (const LiteralCase& c : kNumberCases) {
    EXPECT_EQ(repr_number_literal(c.literal), c.repr) << c.literal;
  }
}

TEST(LiteralTest, NumberKinds) {
  EXPECT_EQ(number_kind("0xE"), NumberKind::Int);  // 'E' is a hex digit, not an exponent
  EXPECT_EQ(number_kind("1e5"), NumberKind::Float);
  EXPECT_EQ(number_kind("1."), NumberKind::Float);
  EXPECT_EQ(number_kind("1J"), NumberKind::Imaginary);
  EXPECT_EQ(number_kind("10"), NumberKind::Int);
}

TEST(LiteralTest, SourceLineEndsInsideLiteralsReadAsLf) {
  EXPECT_EQ(to_utf8(decode_str_literal("'''a\r\nb\rc'''")), "a\nb\nc");
  EXPECT_EQ(to_utf8(decode_str_literal("'a\\\r\nb'")), "ab");  // continuation with CRLF
  EXPECT_EQ(to_utf8(decode_str_literal("r'a\\\r\nb'")), "a\\\nb");
  EXPECT_EQ(decode_bytes_literal("b'''x\r\ny'''"), "x\ny");
}

TEST(LiteralTest, PrefixAndBody) {
  StringPrefix p = string_prefix("Rb'''x'''");
  EXPECT_TRUE(p.raw);
  EXPECT_TRUE(p.bytes);
  EXPECT_FALSE(p.fstring);
  EXPECT_EQ(p.length, 2u);
  EXPECT_EQ(string_body("Rb'''x'''"), "x");
  EXPECT_EQ(string_body("''"), "");
  EXPECT_EQ(string_body("''''''"), "");
  EXPECT_EQ(string_body("f'{x}'"), "{x}");
}

TEST(LiteralTest, FStringTextCollapsesDoubledBraces) {
  EXPECT_EQ(to_utf8(decode_fstring_text("a{{b}}c\\n", false)), "a{b}c\n");
  EXPECT_EQ(to_utf8(decode_fstring_text("a{{\\n", true)), "a{\\n");
  EXPECT_EQ(to_utf8(decode_fstring_text("\\N{BULLET} x", false)), "\xe2\x80\xa2 x");
}

TEST(LiteralTest, LoneSurrogatesSurviveUtf8RoundTrip) {
  std::u32string value = decode_str_literal("'\\ud800x'");
  ASSERT_EQ(value.size(), 2u);
  EXPECT_EQ(value[0], 0xD800u);
  EXPECT_EQ(from_utf8(to_utf8(value)), value);
}

TEST(LiteralTest, InvalidLiteralsAreErrors) {
  EXPECT_THROW(decode_bytes_literal("b'caf\xc3\xa9'"), LiteralError);
  EXPECT_THROW(decode_str_literal("'\\N{NO SUCH CHARACTER NAME}'"), LiteralError);
  EXPECT_THROW(decode_str_literal("'\\N{}'"), LiteralError);
  EXPECT_THROW(decode_str_literal("'\\N'"), LiteralError);
  EXPECT_THROW(decode_str_literal("'\\x4'"), LiteralError);
  EXPECT_THROW(decode_str_literal("'\\u12'"), LiteralError);
  EXPECT_THROW(decode_str_literal("'\\U00110000'"), LiteralError);
  EXPECT_THROW(decode_bytes_literal("b'\\x'"), LiteralError);
}

TEST(LiteralTest, BytesErrorNamesFileLineCol) {
  SourceFile src("m.py", "x = 1\ny = b'\xc3\xa9'\n");
  auto tokens = tokenize(src);
  const Token* str = nullptr;
  for (const Token& t : tokens) {
    if (t.kind == TokenKind::String) str = &t;
  }
  ASSERT_NE(str, nullptr);
  try {
    decode_bytes_token(src, *str);
    FAIL() << "expected an error";
  } catch (const SyntaxError& e) {
    EXPECT_EQ(e.diagnostic().line, 2);
    EXPECT_EQ(e.diagnostic().col, 5);
    EXPECT_EQ(e.diagnostic().message, "bytes can only contain ASCII literal characters");
  }
}

TEST(LiteralTest, UnknownCharacterNameErrorPointsIntoTheLiteral) {
  SourceFile src("m.py", "s = '\\N{NOPE}'\n");
  auto tokens = tokenize(src);
  try {
    decode_str_token(src, tokens[2]);
    FAIL() << "expected an error";
  } catch (const SyntaxError& e) {
    EXPECT_EQ(e.diagnostic().line, 1);
    EXPECT_EQ(e.diagnostic().col, 6);
    EXPECT_NE(e.diagnostic().message.find("unknown Unicode character name"), std::string::npos);
  }
}

TEST(LiteralTest, BigIntegers) {
  EXPECT_EQ(int_literal_to_decimal("0x1" + std::string(40, '0')), "1461501637330902918203684832716283019655932542976");
  EXPECT_EQ(int_literal_to_decimal("000"), "0");
  EXPECT_EQ(int_literal_to_decimal("1_2_3"), "123");
}

}  // namespace
}  // namespace npufuse::frontend
