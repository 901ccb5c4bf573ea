#include "frontend/token_names.h"

#include <array>

namespace npufuse::frontend {

std::string_view token_kind_name(TokenKind kind) {
  switch (kind) {
    case TokenKind::EndMarker: return "ENDMARKER";
    case TokenKind::Name: return "NAME";
    case TokenKind::Keyword: return "KEYWORD";
    case TokenKind::Number: return "NUMBER";
    case TokenKind::String: return "STRING";
    case TokenKind::FStringStart: return "FSTRING_START";
    case TokenKind::FStringMiddle: return "FSTRING_MIDDLE";
    case TokenKind::FStringEnd: return "FSTRING_END";
    case TokenKind::Op: return "OP";
    case TokenKind::Newline: return "NEWLINE";
    case TokenKind::Nl: return "NL";
    case TokenKind::Comment: return "COMMENT";
    case TokenKind::Indent: return "INDENT";
    case TokenKind::Dedent: return "DEDENT";
    case TokenKind::Continuation: return "CONTINUATION";
    case TokenKind::TypeComment: return "TYPE_COMMENT";
    case TokenKind::Error: return "ERRORTOKEN";
  }
  return "?";
}

namespace {
// Indexed by the enum's value; the order must follow token.h.
constexpr std::array<std::string_view, 49> kOpTexts = {
    "",   "(",  ")",  "[",  "]",  "{",  "}",  ":",  ",",   ";",   ".",  "...", "->",
    "@",  "=",  ":=", "+",  "-",  "*",  "/",  "|",  "&",   "<",   ">",  "%",   "==",
    "!=", "<=", ">=", "~",  "^",  "<<", ">>", "**", "//",  "+=",  "-=", "*=",  "/=",
    "%=", "&=", "|=", "^=", "<<=", ">>=", "**=", "//=", "@=", "!"};
static_assert(static_cast<size_t>(Op::Exclamation) == 48);

constexpr std::array<std::string_view, 36> kKeywordTexts = {
    "",       "False",  "None",   "True",     "and",    "as",      "assert", "async", "await",
    "break",  "class",  "continue", "def",    "del",    "elif",    "else",   "except", "finally",
    "for",    "from",   "global", "if",       "import", "in",      "is",     "lambda", "nonlocal",
    "not",    "or",     "pass",   "raise",    "return", "try",     "while",  "with",  "yield"};
static_assert(static_cast<size_t>(Kw::Yield) == 35);
}  // namespace

std::string_view op_text(Op op) {
  size_t i = static_cast<size_t>(op);
  return i < kOpTexts.size() ? kOpTexts[i] : "";
}

std::string_view keyword_text(Kw kw) {
  size_t i = static_cast<size_t>(kw);
  return i < kKeywordTexts.size() ? kKeywordTexts[i] : "";
}

Kw keyword_from_text(std::string_view word) {
  for (size_t i = 1; i < kKeywordTexts.size(); ++i) {
    if (kKeywordTexts[i] == word) return static_cast<Kw>(i);
  }
  return Kw::None;
}

}  // namespace npufuse::frontend
