#pragma once
// Tokens of the lossless Python lexer.
//
// The token stream covers every byte of the source: significant tokens,
// comments, non-logical newlines (NL), line continuations and the
// INDENT/DEDENT/NEWLINE/ENDMARKER structure tokens. Whitespace between tokens
// is not a token; it is the gap between one token's `end` and the next
// token's `begin`. A rewrite therefore edits byte ranges and leaves
// everything else byte-identical.
//
// f-strings are tokenized the PEP 701 way (Python 3.12+): FStringStart,
// FStringMiddle, nested expression tokens, FStringEnd. This is what lets
// `f"{x["a"]}"` and arbitrarily nested f-strings lex correctly.
#include <cstdint>
#include <string_view>

namespace npufuse::frontend {

enum class TokenKind : uint8_t {
  EndMarker,
  Name,          // identifiers and soft keywords (match, case, type, _)
  Keyword,       // hard keywords: if, def, None, True, ...
  Number,        // int, float, imaginary literals, with underscores
  String,        // a complete non-f string literal, prefixes included
  FStringStart,  // f" / rf''' ... : prefix and opening quote
  FStringMiddle, // literal text inside an f-string (escapes undecoded)
  FStringEnd,    // closing quote of an f-string
  Op,            // operators and delimiters; `op` says which
  Newline,       // logical line end
  Nl,            // non-logical line end (blank line, inside brackets)
  Comment,       // '#' up to (not including) the line end
  Indent,
  Dedent,
  Continuation,  // backslash-newline
  TypeComment,   // reserved; '# type:' comments are emitted as Comment
  Error,         // never produced in a successful lex
};

// Operators and delimiters. Names follow CPython's token module.
enum class Op : uint8_t {
  None,
  LPar, RPar, LSqb, RSqb, LBrace, RBrace,
  Colon, Comma, Semi, Dot, Ellipsis, RArrow, At, Equal, ColonEqual,
  Plus, Minus, Star, Slash, VBar, Amper, Less, Greater, Percent,
  EqEqual, NotEqual, LessEqual, GreaterEqual, Tilde, CircumFlex,
  LeftShift, RightShift, DoubleStar, DoubleSlash,
  PlusEqual, MinEqual, StarEqual, SlashEqual, PercentEqual, AmperEqual,
  VBarEqual, CircumflexEqual, LeftShiftEqual, RightShiftEqual,
  DoubleStarEqual, DoubleSlashEqual, AtEqual,
  Exclamation,  // '!' inside an f-string replacement field (conversion)
};

// Hard keywords. Soft keywords (match, case, type, _) are Name tokens.
enum class Kw : uint8_t {
  None,
  False_, None_, True_, And, As, Assert, Async, Await, Break, Class,
  Continue, Def, Del, Elif, Else, Except, Finally, For, From, Global, If,
  Import, In, Is, Lambda, Nonlocal, Not, Or, Pass, Raise, Return, Try,
  While, With, Yield,
};

struct Token {
  uint32_t begin = 0;  // byte offset of the first byte in the (BOM-stripped) buffer
  uint32_t end = 0;    // one past the last byte
  TokenKind kind = TokenKind::EndMarker;
  Op op = Op::None;    // for TokenKind::Op
  Kw kw = Kw::None;    // for TokenKind::Keyword
};

}  // namespace npufuse::frontend
