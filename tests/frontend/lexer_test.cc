#include "frontend/lexer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "frontend/token_names.h"

namespace npufuse::frontend {
namespace {

// Checks the lossless property: tokens are ordered, never overlap, and every
// byte between them is plain whitespace.
void expect_covers_every_byte(const SourceFile& src, const std::vector<Token>& tokens) {
  uint32_t at = 0;
  for (const Token& t : tokens) {
    ASSERT_LE(at, t.begin) << "overlapping token " << token_kind_name(t.kind) << " at " << t.begin;
    ASSERT_LE(t.begin, t.end);
    for (uint32_t i = at; i < t.begin; ++i) {
      char c = src.text()[i];
      ASSERT_TRUE(c == ' ' || c == '\t' || c == '\f') << "byte " << i << " (" << int(c) << ") not covered";
    }
    at = t.end;
  }
  EXPECT_EQ(at, src.text().size());
}

// "KIND:text" for each token, joined by spaces; structure tokens without text.
std::string lex(std::string_view code) {
  SourceFile src("t.py", std::string(code));
  std::vector<Token> tokens = tokenize(src);
  expect_covers_every_byte(src, tokens);
  std::string out;
  for (const Token& t : tokens) {
    if (!out.empty()) out += ' ';
    switch (t.kind) {
      case TokenKind::Name:
      case TokenKind::Keyword:
      case TokenKind::Number:
      case TokenKind::String:
      case TokenKind::FStringStart:
      case TokenKind::FStringMiddle:
      case TokenKind::FStringEnd:
      case TokenKind::Op:
      case TokenKind::Comment:
        out += std::string(token_kind_name(t.kind)) + ":" + std::string(token_text(src, t));
        break;
      default:
        out += token_kind_name(t.kind);
    }
  }
  return out;
}

std::string lex_error(std::string_view code) {
  SourceFile src("t.py", std::string(code));
  try {
    tokenize(src);
  } catch (const SyntaxError& e) {
    return e.what();
  }
  return "no error";
}

TEST(LexerTest, EmptyFileIsJustEndMarker) { EXPECT_EQ(lex(""), "ENDMARKER"); }

TEST(LexerTest, SimpleStatement) {
  EXPECT_EQ(lex("x = 1\n"), "NAME:x OP:= NUMBER:1 NEWLINE ENDMARKER");
}

TEST(LexerTest, MissingFinalNewlineGetsZeroWidthNewline) {
  SourceFile src("t.py", "x = 1");
  auto tokens = tokenize(src);
  ASSERT_EQ(tokens.size(), 5u);
  EXPECT_EQ(tokens[3].kind, TokenKind::Newline);
  EXPECT_EQ(tokens[3].begin, 5u);
  EXPECT_EQ(tokens[3].end, 5u);
}

TEST(LexerTest, IndentAndDedentIncludingAtEof) {
  EXPECT_EQ(lex("if a:\n    if b:\n        c\nd\n"),
            "KEYWORD:if NAME:a OP:: NEWLINE INDENT KEYWORD:if NAME:b OP:: NEWLINE INDENT NAME:c NEWLINE "
            "DEDENT DEDENT NAME:d NEWLINE ENDMARKER");
  EXPECT_EQ(lex("def f():\n  return 1"),
            "KEYWORD:def NAME:f OP:( OP:) OP:: NEWLINE INDENT KEYWORD:return NUMBER:1 NEWLINE DEDENT ENDMARKER");
}

TEST(LexerTest, IndentTokenCoversTheIndentation) {
  SourceFile src("t.py", "if a:\n\t b\n");
  auto tokens = tokenize(src);
  ASSERT_EQ(tokens[4].kind, TokenKind::Indent);
  EXPECT_EQ(token_text(src, tokens[4]), "\t ");
}

TEST(LexerTest, BlankAndCommentLinesDoNotChangeIndentation) {
  EXPECT_EQ(lex("if a:\n    b\n\n# top comment\n  \n    c\n"),
            "KEYWORD:if NAME:a OP:: NEWLINE INDENT NAME:b NEWLINE NL COMMENT:# top comment NL NL NAME:c NEWLINE "
            "DEDENT ENDMARKER");
}

TEST(LexerTest, CommentsAreKept) {
  EXPECT_EQ(lex("# c\nx  # d\n"), "COMMENT:# c NL NAME:x COMMENT:# d NEWLINE ENDMARKER");
  EXPECT_EQ(lex("x # type: int"), "NAME:x COMMENT:# type: int NEWLINE ENDMARKER");
}

TEST(LexerTest, CrLfAndCrLineEnds) {
  SourceFile src("t.py", "if a:\r\n    b\rc\r\n");
  auto tokens = tokenize(src);
  expect_covers_every_byte(src, tokens);
  EXPECT_EQ(lex("if a:\r\n    b\rc\r\n"),
            "KEYWORD:if NAME:a OP:: NEWLINE INDENT NAME:b NEWLINE DEDENT NAME:c NEWLINE ENDMARKER");
  EXPECT_EQ(token_text(src, tokens[3]), "\r\n");
  EXPECT_EQ(token_text(src, tokens[6]), "\r");
  LineCol c = src.line_col(tokens[8].begin);
  EXPECT_EQ(c.line, 3);
  EXPECT_EQ(c.col, 0);
}

TEST(LexerTest, BomIsNotAToken) {
  SourceFile src("t.py", "\xEF\xBB\xBFx\n");
  auto tokens = tokenize(src);
  EXPECT_EQ(tokens[0].begin, 0u);
  EXPECT_EQ(token_text(src, tokens[0]), "x");
}

TEST(LexerTest, ImplicitJoiningInsideBrackets) {
  EXPECT_EQ(lex("f(a,\n      b)\n"), "NAME:f OP:( NAME:a OP:, NL NAME:b OP:) NEWLINE ENDMARKER");
  EXPECT_EQ(lex("x = [\n# c\n]\n"), "NAME:x OP:= OP:[ NL COMMENT:# c NL OP:] NEWLINE ENDMARKER");
}

TEST(LexerTest, BackslashContinuation) {
  EXPECT_EQ(lex("x = 1 + \\\n    2\n"), "NAME:x OP:= NUMBER:1 OP:+ CONTINUATION NUMBER:2 NEWLINE ENDMARKER");
  EXPECT_EQ(lex("x = \\\r\n1\n"), "NAME:x OP:= CONTINUATION NUMBER:1 NEWLINE ENDMARKER");
  EXPECT_EQ(lex_error("x = 1 \\ 2\n"), "t.py:1:7: unexpected character after line continuation character");
  EXPECT_EQ(lex_error("x = 1 \\"), "t.py:1:7: unexpected EOF while parsing");
}

TEST(LexerTest, FormFeedAtLineStartResetsIndentation) {
  EXPECT_EQ(lex("if a:\n    b\n\f\nc\n"),
            "KEYWORD:if NAME:a OP:: NEWLINE INDENT NAME:b NEWLINE NL DEDENT NAME:c NEWLINE ENDMARKER");
  EXPECT_EQ(lex("x\n\fy\n"), "NAME:x NEWLINE NAME:y NEWLINE ENDMARKER");
}

TEST(LexerTest, TabsFollowCPythonRules) {
  // A tab is 8 columns and also must order the same when counted as 1.
  EXPECT_EQ(lex("if a:\n\tb\n\tc\n"),
            "KEYWORD:if NAME:a OP:: NEWLINE INDENT NAME:b NEWLINE NAME:c NEWLINE DEDENT ENDMARKER");
  EXPECT_EQ(lex_error("if a:\n\tb\n        c\n"), "t.py:3:9: inconsistent use of tabs and spaces in indentation");
  EXPECT_EQ(lex_error("if a:\n        b\n\tc\n"), "t.py:3:2: inconsistent use of tabs and spaces in indentation");
  EXPECT_EQ(lex("if a:\n    \tb\n"), "KEYWORD:if NAME:a OP:: NEWLINE INDENT NAME:b NEWLINE DEDENT ENDMARKER");
}

TEST(LexerTest, UnindentMustMatchAnOuterLevel) {
  EXPECT_EQ(lex_error("if a:\n    b\n  c\n"), "t.py:3:3: unindent does not match any outer indentation level");
}

TEST(LexerTest, KeywordsAndSoftKeywords) {
  SourceFile src("t.py", "match case type _ None lambda await async\n");
  auto tokens = tokenize(src);
  EXPECT_EQ(tokens[0].kind, TokenKind::Name);
  EXPECT_EQ(tokens[1].kind, TokenKind::Name);
  EXPECT_EQ(tokens[2].kind, TokenKind::Name);
  EXPECT_EQ(tokens[3].kind, TokenKind::Name);
  EXPECT_EQ(tokens[4].kw, Kw::None_);
  EXPECT_EQ(tokens[5].kw, Kw::Lambda);
  EXPECT_EQ(tokens[6].kw, Kw::Await);
  EXPECT_EQ(tokens[7].kw, Kw::Async);
}

TEST(LexerTest, NonAsciiIdentifiers) {
  EXPECT_EQ(lex("\xC3\xA9t\xC3\xA9 = \xCF\x80\n"), "NAME:\xC3\xA9t\xC3\xA9 OP:= NAME:\xCF\x80 NEWLINE ENDMARKER");
  EXPECT_EQ(lex("x\xE4\xB8\xAD" "1\n"), "NAME:x\xE4\xB8\xAD" "1 NEWLINE ENDMARKER");
  EXPECT_EQ(lex_error("x = \xE2\x82\xAC\n"), "t.py:1:5: invalid character '\xE2\x82\xAC' (U+20AC)");
  EXPECT_EQ(lex_error("x =\xC2\xA0y\n"), "t.py:1:4: invalid non-printable character U+00A0");
  EXPECT_EQ(lex_error("a $ b\n"), "t.py:1:3: invalid syntax");
}

TEST(LexerTest, OperatorsTakeTheLongestMatch) {
  EXPECT_EQ(lex("a **= b // c ->d := ... != <<= @= >>\n"),
            "NAME:a OP:**= NAME:b OP:// NAME:c OP:-> NAME:d OP::= OP:... OP:!= OP:<<= OP:@= OP:>> NEWLINE "
            "ENDMARKER");
  SourceFile src("t.py", "a.b[1:2]\n");
  auto tokens = tokenize(src);
  EXPECT_EQ(tokens[1].op, Op::Dot);
  EXPECT_EQ(tokens[3].op, Op::LSqb);
  EXPECT_EQ(tokens[5].op, Op::Colon);
}

TEST(LexerTest, ValidNumbers) {
  for (const char* n : {"0", "00", "0_0", "1_000", "0x_fF", "0o17", "0b1_0", "1.", ".5", "1.5e-3", "1E+5", "1_0.0_1",
                        "1j", "1.5J", "0e0", "00.5", "09.5", "012e3", "0j", "1e5j", "0xdeadbeef"}) {
    EXPECT_EQ(lex(n), std::string("NUMBER:") + n + " NEWLINE ENDMARKER") << n;
  }
  EXPECT_EQ(lex("1if x else 2\n"), "NUMBER:1 KEYWORD:if NAME:x KEYWORD:else NUMBER:2 NEWLINE ENDMARKER");
  EXPECT_EQ(lex("1else\n"), "NUMBER:1 KEYWORD:else NEWLINE ENDMARKER");
  EXPECT_EQ(lex("x[1:2]\n"), "NAME:x OP:[ NUMBER:1 OP:: NUMBER:2 OP:] NEWLINE ENDMARKER");
}

TEST(LexerTest, InvalidNumbersAreRejectedLikeCPython) {
  EXPECT_EQ(lex_error("1__0"), "t.py:1:3: invalid decimal literal");
  EXPECT_EQ(lex_error("1_"), "t.py:1:3: invalid decimal literal");
  EXPECT_EQ(lex_error("0777"),
            "t.py:1:1: leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal "
            "integers");
  EXPECT_EQ(lex_error("0x"), "t.py:1:3: invalid hexadecimal literal");
  EXPECT_EQ(lex_error("0o8"), "t.py:1:3: invalid digit '8' in octal literal");
  EXPECT_EQ(lex_error("0b102"), "t.py:1:5: invalid digit '2' in binary literal");
  EXPECT_EQ(lex_error("1abc"), "t.py:1:2: invalid decimal literal");
  EXPECT_EQ(lex_error("1e"), "t.py:1:2: invalid decimal literal");
  EXPECT_EQ(lex_error("1e+"), "t.py:1:4: invalid decimal literal");
  EXPECT_EQ(lex_error("1jx"), "t.py:1:3: invalid imaginary literal");
}

TEST(LexerTest, StringPrefixesAndQuotes) {
  for (const char* s : {"'a'", "\"a\"", "r'\\\\'", "u'x'", "U'x'", "b'x'", "BR'x'", "rb'x'", "Rb'x'", "'''a\n'b'''",
                        "\"\"\"x\"\"\"", "''", "''''''", "'a\\'b'", "'a\\\nb'"}) {
    EXPECT_EQ(lex(s), std::string("STRING:") + s + " NEWLINE ENDMARKER") << s;
  }
  // Not a prefix: a name followed by a string.
  EXPECT_EQ(lex("ur'x'"), "NAME:ur STRING:'x' NEWLINE ENDMARKER");
  EXPECT_EQ(lex("bf'x'"), "NAME:bf STRING:'x' NEWLINE ENDMARKER");
}

TEST(LexerTest, UnterminatedStrings) {
  EXPECT_EQ(lex_error("x = 'abc\ny = 1\n"), "t.py:1:5: unterminated string literal (detected at line 1)");
  EXPECT_EQ(lex_error("x = 1\ns = b'''abc\n\n"),
            "t.py:2:5: unterminated triple-quoted string literal (detected at line 3)");
  EXPECT_EQ(lex_error("f'abc"), "t.py:1:1: unterminated f-string literal (detected at line 1)");
  EXPECT_EQ(lex_error("f'''abc\n"), "t.py:1:1: unterminated triple-quoted f-string literal (detected at line 1)");
}

TEST(LexerTest, FStringPieces) {
  EXPECT_EQ(lex("f'a{x}b'"),
            "FSTRING_START:f' FSTRING_MIDDLE:a OP:{ NAME:x OP:} FSTRING_MIDDLE:b FSTRING_END:' NEWLINE ENDMARKER");
  EXPECT_EQ(lex("f''"), "FSTRING_START:f' FSTRING_END:' NEWLINE ENDMARKER");
  EXPECT_EQ(lex("F'{{x}}'"), "FSTRING_START:F' FSTRING_MIDDLE:{{x}} FSTRING_END:' NEWLINE ENDMARKER");
  EXPECT_EQ(lex("rf'\\d{x}'"),
            "FSTRING_START:rf' FSTRING_MIDDLE:\\d OP:{ NAME:x OP:} FSTRING_END:' NEWLINE ENDMARKER");
}

TEST(LexerTest, FStringConversionFormatSpecAndDebug) {
  EXPECT_EQ(lex("f'{x!r:>{w}.2f}'"),
            "FSTRING_START:f' OP:{ NAME:x OP:! NAME:r OP:: FSTRING_MIDDLE:> OP:{ NAME:w OP:} FSTRING_MIDDLE:.2f "
            "OP:} FSTRING_END:' NEWLINE ENDMARKER");
  EXPECT_EQ(lex("f'{x=}'"), "FSTRING_START:f' OP:{ NAME:x OP:= OP:} FSTRING_END:' NEWLINE ENDMARKER");
  EXPECT_EQ(lex("f'{a!=b}'"), "FSTRING_START:f' OP:{ NAME:a OP:!= NAME:b OP:} FSTRING_END:' NEWLINE ENDMARKER");
  EXPECT_EQ(lex("f'{(x:=1)}'"),
            "FSTRING_START:f' OP:{ OP:( NAME:x OP::= NUMBER:1 OP:) OP:} FSTRING_END:' NEWLINE ENDMARKER");
  EXPECT_EQ(lex("f'{x:}'"), "FSTRING_START:f' OP:{ NAME:x OP:: OP:} FSTRING_END:' NEWLINE ENDMARKER");
}

TEST(LexerTest, FStringsNestAndReuseQuotes) {
  EXPECT_EQ(lex("f\"{d[\"k\"]}\""),
            "FSTRING_START:f\" OP:{ NAME:d OP:[ STRING:\"k\" OP:] OP:} FSTRING_END:\" NEWLINE ENDMARKER");
  EXPECT_EQ(lex("f'{f'{f'{x}'}'}'"),
            "FSTRING_START:f' OP:{ FSTRING_START:f' OP:{ FSTRING_START:f' OP:{ NAME:x OP:} FSTRING_END:' OP:} "
            "FSTRING_END:' OP:} FSTRING_END:' NEWLINE ENDMARKER");
  EXPECT_EQ(lex("f'{ {\"a\": 1}[\"a\"] }'"),
            "FSTRING_START:f' OP:{ OP:{ STRING:\"a\" OP:: NUMBER:1 OP:} OP:[ STRING:\"a\" OP:] OP:} FSTRING_END:' "
            "NEWLINE ENDMARKER");
}

TEST(LexerTest, TripleQuotedFStringSpansLines) {
  EXPECT_EQ(lex("f'''a\n{x +\n y}\n'''\n"),
            "FSTRING_START:f''' FSTRING_MIDDLE:a\n OP:{ NAME:x OP:+ NL NAME:y OP:} FSTRING_MIDDLE:\n "
            "FSTRING_END:''' NEWLINE ENDMARKER");
}

TEST(LexerTest, FStringEscapes) {
  EXPECT_EQ(lex("f'\\'{x}\\N{BULLET}'"),
            "FSTRING_START:f' FSTRING_MIDDLE:\\' OP:{ NAME:x OP:} FSTRING_MIDDLE:\\N{BULLET} FSTRING_END:' NEWLINE "
            "ENDMARKER");
  EXPECT_EQ(lex_error("f'a}b'"), "t.py:1:4: f-string: single '}' is not allowed");
  EXPECT_EQ(lex_error("f'{x:abc'"), "t.py:1:9: f-string: expecting '}'");
  EXPECT_EQ(lex_error("f'{x)}'"), "t.py:1:5: f-string: unmatched ')'");
}

TEST(LexerTest, BracketErrors) {
  EXPECT_EQ(lex_error("x = )\n"), "t.py:1:5: unmatched ')'");
  EXPECT_EQ(lex_error("x = (]\n"), "t.py:1:6: closing parenthesis ']' does not match opening parenthesis '('");
  EXPECT_EQ(lex_error("x = (\n]\n"),
            "t.py:2:1: closing parenthesis ']' does not match opening parenthesis '(' on line 1");
  EXPECT_EQ(lex_error("x = [1,\n  (2\n"), "t.py:2:3: '(' was never closed");
}

TEST(LexerTest, NestingLimit) {
  // CPython accepts 200 open brackets and rejects the 201st.
  std::string ok(200, '(');
  ok += std::string(200, ')');
  EXPECT_NO_THROW(tokenize(SourceFile("t.py", ok)));
  EXPECT_EQ(lex_error(std::string(201, '[')), "t.py:1:201: too many nested parentheses");
}

TEST(LexerTest, TooManyIndentationLevels) {
  std::string code;
  for (int depth = 0; depth < 100; ++depth) code += std::string(depth, ' ') + "if x:\n";
  code += std::string(100, ' ') + "pass\n";
  EXPECT_EQ(lex_error(code), "t.py:101:101: too many levels of indentation");
}

TEST(LexerTest, TokenPositionsMatchCPython) {
  // Positions as CPython's tokenize reports them for this input
  // (line, column start, line, column end).
  SourceFile src("t.py", "def f(a):\n    return a ** 2  # sq\n");
  auto tokens = tokenize(src);
  struct Expected {
    TokenKind kind;
    int line, col, end_line, end_col;
  };
  const Expected expected[] = {
      {TokenKind::Keyword, 1, 0, 1, 3}, {TokenKind::Name, 1, 4, 1, 5},     {TokenKind::Op, 1, 5, 1, 6},
      {TokenKind::Name, 1, 6, 1, 7},    {TokenKind::Op, 1, 7, 1, 8},       {TokenKind::Op, 1, 8, 1, 9},
      {TokenKind::Newline, 1, 9, 2, 0}, {TokenKind::Indent, 2, 0, 2, 4},   {TokenKind::Keyword, 2, 4, 2, 10},
      {TokenKind::Name, 2, 11, 2, 12},  {TokenKind::Op, 2, 13, 2, 15},     {TokenKind::Number, 2, 16, 2, 17},
      {TokenKind::Comment, 2, 19, 2, 23}, {TokenKind::Newline, 2, 23, 3, 0}, {TokenKind::Dedent, 3, 0, 3, 0},
      {TokenKind::EndMarker, 3, 0, 3, 0},
  };
  ASSERT_EQ(tokens.size(), std::size(expected));
  for (size_t i = 0; i < tokens.size(); ++i) {
    LineCol b = src.line_col(tokens[i].begin), e = src.line_col(tokens[i].end);
    EXPECT_EQ(tokens[i].kind, expected[i].kind) << i;
    EXPECT_EQ(b.line, expected[i].line) << i;
    EXPECT_EQ(b.col, expected[i].col) << i;
    EXPECT_EQ(e.line, expected[i].end_line) << i;
    EXPECT_EQ(e.col, expected[i].end_col) << i;
  }
}

TEST(LexerTest, TokenNames) {
  EXPECT_EQ(op_text(Op::DoubleSlashEqual), "//=");
  EXPECT_EQ(op_text(Op::Exclamation), "!");
  EXPECT_EQ(keyword_text(Kw::Nonlocal), "nonlocal");
  EXPECT_EQ(keyword_from_text("yield"), Kw::Yield);
  EXPECT_EQ(keyword_from_text("match"), Kw::None);
}

}  // namespace
}  // namespace npufuse::frontend
