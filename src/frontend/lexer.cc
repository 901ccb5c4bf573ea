#include "frontend/lexer.h"

#include <fmt/format.h>

#include <array>
#include <cstring>

#include "frontend/unicode_tables.h"
#include "frontend/utf8.h"

namespace npufuse::frontend {

namespace {

// CPython's limits (Parser/tokenizer.h): MAXLEVEL and MAXINDENT.
constexpr size_t kMaxNesting = 200;
constexpr int kMaxIndentLevels = 100;
constexpr int kTabSize = 8;

// Character classes of ASCII bytes; bytes >= 0x80 are decided by UTF-8
// decoding and the Unicode identifier tables.
enum CharClass : uint8_t {
  kIdStart = 1,     // A-Z a-z _
  kIdContinue = 2,  // kIdStart, 0-9
  kDigit = 4,
  kHexDigit = 8,
  kBlank = 16,      // space, tab, form feed
};

constexpr std::array<uint8_t, 256> make_char_classes() {
  std::array<uint8_t, 256> t{};
  for (int c = 'a'; c <= 'z'; ++c) t[c] = kIdStart | kIdContinue;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] = kIdStart | kIdContinue;
  t['_'] = kIdStart | kIdContinue;
  for (int c = '0'; c <= '9'; ++c) t[c] = kIdContinue | kDigit | kHexDigit;
  for (int c = 'a'; c <= 'f'; ++c) t[c] |= kHexDigit;
  for (int c = 'A'; c <= 'F'; ++c) t[c] |= kHexDigit;
  t[' '] = t['\t'] = t['\f'] = kBlank;
  return t;
}
constexpr std::array<uint8_t, 256> kClass = make_char_classes();

inline bool has_class(char c, uint8_t cls) { return kClass[static_cast<unsigned char>(c)] & cls; }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Hard keywords by length, so a lookup compares against a handful at most.
Kw keyword_of(const char* p, size_t len) {
  struct Entry {
    const char* text;
    Kw kw;
  };
  static constexpr Entry k2[] = {{"as", Kw::As}, {"if", Kw::If}, {"in", Kw::In}, {"is", Kw::Is}, {"or", Kw::Or}};
  static constexpr Entry k3[] = {{"and", Kw::And}, {"def", Kw::Def}, {"del", Kw::Del},
                                 {"for", Kw::For}, {"not", Kw::Not}, {"try", Kw::Try}};
  static constexpr Entry k4[] = {{"None", Kw::None_}, {"True", Kw::True_}, {"elif", Kw::Elif},
                                 {"else", Kw::Else},  {"from", Kw::From},  {"pass", Kw::Pass},
                                 {"with", Kw::With}};
  static constexpr Entry k5[] = {{"False", Kw::False_}, {"async", Kw::Async}, {"await", Kw::Await},
                                 {"break", Kw::Break},  {"class", Kw::Class}, {"raise", Kw::Raise},
                                 {"while", Kw::While},  {"yield", Kw::Yield}};
  static constexpr Entry k6[] = {{"assert", Kw::Assert}, {"except", Kw::Except}, {"global", Kw::Global},
                                 {"import", Kw::Import}, {"lambda", Kw::Lambda}, {"return", Kw::Return}};
  static constexpr Entry k7[] = {{"finally", Kw::Finally}};
  static constexpr Entry k8[] = {{"continue", Kw::Continue}, {"nonlocal", Kw::Nonlocal}};
  auto find = [&](const auto& entries) {
    for (const Entry& e : entries) {
      if (e.text[0] == p[0] && std::memcmp(e.text, p, len) == 0) return e.kw;
    }
    return Kw::None;
  };
  switch (len) {
    case 2: return find(k2);
    case 3: return find(k3);
    case 4: return find(k4);
    case 5: return find(k5);
    case 6: return find(k6);
    case 7: return find(k7);
    case 8: return find(k8);
    default: return Kw::None;
  }
}

// What an open bracket-like construct is; the lexer keeps a stack of them.
enum class Scope : uint8_t {
  Paren,    // (
  Bracket,  // [
  Brace,    // {
  FString,  // inside an f-string's literal text
  Field,    // inside an f-string replacement field {...}
};

struct OpenScope {
  Scope kind;
  uint32_t open_offset;       // where it was opened, for messages
  char quote = 0;             // FString: ' or "
  bool triple = false;        // FString: ''' or """
  bool raw = false;           // FString: r prefix
  bool in_format_spec = false;  // Field: after the top-level ':'
  uint32_t fstring_index = 0;   // Field: stack index of its FString
};

class Lexer {
 public:
  explicit Lexer(const SourceFile& source)
      : src_(source), text_(source.text()), s_(text_.data()), n_(static_cast<uint32_t>(text_.size())) {}

  std::vector<Token> run();

 private:
  [[noreturn]] void fail(uint32_t offset, std::string message) const {
    throw_syntax_error(src_, offset, std::move(message));
  }
  int line_of(uint32_t offset) const { return src_.line_col(offset).line; }
  // Line CPython names in "(detected at line N)" for a literal left open at EOF.
  int last_line() const { return line_of(n_ > 0 ? n_ - 1 : 0); }

  void emit(TokenKind kind, uint32_t begin, uint32_t end, Op op = Op::None, Kw kw = Kw::None) {
    tokens_.push_back(Token{begin, end, kind, op, kw});
  }
  void emit_significant(TokenKind kind, uint32_t begin, uint32_t end, Op op = Op::None, Kw kw = Kw::None) {
    emit(kind, begin, end, op, kw);
    line_has_tokens_ = true;
  }

  void check_bytes() const;
  void lex_indentation();
  void lex_code_token();
  void lex_newline();
  void lex_comment();
  void lex_continuation();
  void lex_name();
  void lex_number();
  void lex_string(uint32_t start, uint32_t quote_pos, bool is_fstring, bool is_raw);
  void lex_fstring_text();
  void lex_format_spec();
  uint32_t skip_escape_in_fstring(uint32_t i, const OpenScope& fstring) const;
  bool at_fstring_end(uint32_t i, const OpenScope& fstring) const;
  void lex_operator();
  void open_scope(Scope kind, uint32_t offset, Op op);
  void close_scope(char closer, uint32_t offset, Op op);
  void verify_end_of_number(uint32_t i, const char* kind) const;
  [[noreturn]] void fail_invalid_character(uint32_t offset) const;
  void finish();

  const SourceFile& src_;
  std::string_view text_;
  const char* s_;
  uint32_t n_;
  uint32_t pos_ = 0;
  std::vector<Token> tokens_;
  std::vector<OpenScope> scopes_;
  int indents_[kMaxIndentLevels + 1] = {0};      // columns with tabs to multiples of 8
  int alt_indents_[kMaxIndentLevels + 1] = {0};  // columns with tabs counted as 1
  int indent_depth_ = 0;
  bool at_line_start_ = true;
  bool line_has_tokens_ = false;  // the logical line holds a significant token
};

std::vector<Token> Lexer::run() {
  check_bytes();
  // Python averages 5-7 bytes per token, but dense code (long lists of
  // numbers) reaches 3. Reserving for 2 bytes per token avoids regrowing the
  // vector (a copy of everything lexed so far); untouched reserved pages cost
  // nothing.
  tokens_.reserve(n_ / 2 + 64);
  for (;;) {
    if (!scopes_.empty()) {
      const OpenScope& top = scopes_.back();
      if (top.kind == Scope::FString) {
        lex_fstring_text();
        continue;
      }
      if (top.kind == Scope::Field && top.in_format_spec) {
        lex_format_spec();
        continue;
      }
    }
    if (at_line_start_) {
      at_line_start_ = false;
      if (scopes_.empty()) lex_indentation();
    }
    while (pos_ < n_ && has_class(s_[pos_], kBlank)) ++pos_;
    if (pos_ >= n_) break;
    lex_code_token();
  }
  finish();
  return std::move(tokens_);
}

void Lexer::check_bytes() const {
  if (text_.size() > 0xFFFFFFF0u) fail(0, "source file too large (over 4 GiB)");
  if (const void* nul = std::memchr(s_, 0, n_)) {
    fail(static_cast<uint32_t>(static_cast<const char*>(nul) - s_), "source code cannot contain null bytes");
  }
  size_t bad = find_invalid_utf8(text_);
  if (bad != kValidUtf8) {
    fail(static_cast<uint32_t>(bad),
         fmt::format("invalid UTF-8: byte 0x{:02x} cannot start or continue a character "
                     "(only UTF-8 source is supported)",
                     static_cast<unsigned char>(s_[bad])));
  }
}

// Measures the indentation of a new logical line and emits INDENT/DEDENT.
// Blank and comment-only lines leave the indentation alone (CPython skips
// them). Tabs advance to the next multiple of 8; the same line measured with
// tabs as 1 column must order the same way, or the file mixes tabs and
// spaces ambiguously.
void Lexer::lex_indentation() {
  int col = 0, alt_col = 0;
  int continuation_col = -1;  // a backslash in the indentation fixes the level
  uint32_t indent_begin = pos_;
  for (;;) {
    if (pos_ >= n_) break;
    char c = s_[pos_];
    if (c == ' ') {
      ++col, ++alt_col;
    } else if (c == '\t') {
      col = (col / kTabSize + 1) * kTabSize;
      ++alt_col;
    } else if (c == '\f') {
      col = alt_col = 0;
    } else if (c == '\\') {
      if (continuation_col < 0) continuation_col = col;
      lex_continuation();
      indent_begin = pos_;
      continue;
    } else {
      break;
    }
    ++pos_;
  }
  if (pos_ >= n_) return;  // end of file: finish() closes the open blocks
  char c = s_[pos_];
  if (c == '#' || c == '\n' || c == '\r') return;  // blank line
  if (continuation_col >= 0) col = alt_col = continuation_col;

  if (col == indents_[indent_depth_]) {
    if (alt_col != alt_indents_[indent_depth_]) fail(pos_, "inconsistent use of tabs and spaces in indentation");
  } else if (col > indents_[indent_depth_]) {
    if (indent_depth_ + 1 >= kMaxIndentLevels) fail(pos_, "too many levels of indentation");
    if (alt_col <= alt_indents_[indent_depth_]) fail(pos_, "inconsistent use of tabs and spaces in indentation");
    ++indent_depth_;
    indents_[indent_depth_] = col;
    alt_indents_[indent_depth_] = alt_col;
    emit(TokenKind::Indent, indent_begin, pos_);
  } else {
    while (indent_depth_ > 0 && col < indents_[indent_depth_]) {
      --indent_depth_;
      emit(TokenKind::Dedent, pos_, pos_);
    }
    if (col != indents_[indent_depth_]) fail(pos_, "unindent does not match any outer indentation level");
    if (alt_col != alt_indents_[indent_depth_]) fail(pos_, "inconsistent use of tabs and spaces in indentation");
  }
}

void Lexer::lex_code_token() {
  const char c = s_[pos_];
  const unsigned char uc = static_cast<unsigned char>(c);
  if (has_class(c, kIdStart) || uc >= 0x80) return lex_name();
  if (is_digit(c) || (c == '.' && pos_ + 1 < n_ && is_digit(s_[pos_ + 1]))) return lex_number();
  switch (c) {
    case '\n':
    case '\r': return lex_newline();
    case '#': return lex_comment();
    case '\\': return lex_continuation();
    case '\'':
    case '"': return lex_string(pos_, pos_, false, false);
    default: return lex_operator();
  }
}

void Lexer::lex_newline() {
  uint32_t begin = pos_;
  pos_ += (s_[pos_] == '\r' && pos_ + 1 < n_ && s_[pos_ + 1] == '\n') ? 2 : 1;
  if (scopes_.empty() && line_has_tokens_) {
    emit(TokenKind::Newline, begin, pos_);
    line_has_tokens_ = false;
  } else {
    emit(TokenKind::Nl, begin, pos_);
  }
  at_line_start_ = true;
}

void Lexer::lex_comment() {
  uint32_t begin = pos_;
  const void* lf = std::memchr(s_ + pos_, '\n', n_ - pos_);
  uint32_t end = lf ? static_cast<uint32_t>(static_cast<const char*>(lf) - s_) : n_;
  // A lone CR also ends the line; only look for one when the file has any.
  if (const void* cr = std::memchr(s_ + pos_, '\r', end - pos_)) {
    end = static_cast<uint32_t>(static_cast<const char*>(cr) - s_);
  }
  emit(TokenKind::Comment, begin, end);
  pos_ = end;
}

void Lexer::lex_continuation() {
  uint32_t begin = pos_++;
  if (pos_ >= n_) fail(begin, "unexpected EOF while parsing");
  if (s_[pos_] == '\r') {
    ++pos_;
    if (pos_ < n_ && s_[pos_] == '\n') ++pos_;
  } else if (s_[pos_] == '\n') {
    ++pos_;
  } else {
    fail(begin, "unexpected character after line continuation character");
  }
  if (pos_ >= n_) fail(begin, "unexpected EOF while parsing");
  emit(TokenKind::Continuation, begin, pos_);
}

void Lexer::fail_invalid_character(uint32_t offset) const {
  uint32_t cp = 0;
  int len = decode_utf8(text_, offset, &cp);
  if (cp >= 0x20 && cp < 0x7F) fail(offset, "invalid syntax");  // $ ? `
  if (is_printable(cp)) {
    fail(offset, fmt::format("invalid character '{}' (U+{:04X})", text_.substr(offset, len), cp));
  }
  fail(offset, fmt::format("invalid non-printable character U+{:04X}", cp));
}

void Lexer::lex_name() {
  const uint32_t begin = pos_;
  uint32_t i = pos_;
  bool ascii = true;
  for (;;) {
    while (i < n_ && has_class(s_[i], kIdContinue)) ++i;
    if (i >= n_ || static_cast<unsigned char>(s_[i]) < 0x80) break;
    uint32_t cp = 0;
    int len = decode_utf8(text_, i, &cp);  // the file was validated up front
    bool ok = (i == begin) ? is_identifier_start(cp) : is_identifier_continue(cp);
    if (!ok) {
      if (i == begin) fail_invalid_character(i);
      break;  // e.g. a non-ASCII operator-like character: reported on its own
    }
    ascii = false;
    i += len;
  }
  const uint32_t len = i - begin;
  // String prefixes: the combinations CPython accepts, before a quote.
  if (i < n_ && (s_[i] == '"' || s_[i] == '\'') && len <= 2 && ascii) {
    bool saw_b = false, saw_r = false, saw_u = false, saw_f = false, valid = true;
    for (uint32_t k = begin; k < i; ++k) {
      char c = static_cast<char>(s_[k] | 0x20);  // lower case
      if (c == 'b' && !saw_b && !saw_u && !saw_f) saw_b = true;
      else if (c == 'u' && !saw_b && !saw_u && !saw_r && !saw_f) saw_u = true;
      else if (c == 'r' && !saw_r && !saw_u) saw_r = true;
      else if (c == 'f' && !saw_f && !saw_b && !saw_u) saw_f = true;
      else valid = false;
    }
    if (valid) return lex_string(begin, i, saw_f, saw_r);
  }
  Kw kw = ascii ? keyword_of(s_ + begin, len) : Kw::None;
  if (kw != Kw::None) {
    emit_significant(TokenKind::Keyword, begin, i, Op::None, kw);
  } else {
    emit_significant(TokenKind::Name, begin, i);
  }
  pos_ = i;
}

// After a number, a letter is an error unless it starts one of the
// keywords that may follow a number in valid code ("1if x else 2").
void Lexer::verify_end_of_number(uint32_t i, const char* kind) const {
  if (i >= n_) return;
  auto next_is = [&](std::string_view word) { return text_.substr(i, word.size()) == word; };
  char c = s_[i];
  bool keyword_follows = false;
  switch (c) {
    case 'a': keyword_follows = next_is("and"); break;
    case 'e': keyword_follows = next_is("else"); break;
    case 'f': keyword_follows = next_is("for"); break;
    case 'i': keyword_follows = next_is("if") || next_is("in") || next_is("is"); break;
    case 'o': keyword_follows = next_is("or"); break;
    case 'n': keyword_follows = next_is("not"); break;
    default: break;
  }
  if (!keyword_follows && has_class(c, kIdContinue)) fail(i, fmt::format("invalid {} literal", kind));
}

// Number literals, following CPython's tokenizer state by state so that the
// same inputs are rejected with the same messages.
void Lexer::lex_number() {
  const uint32_t begin = pos_;
  uint32_t i = pos_;
  auto at = [&](uint32_t k) -> char { return k < n_ ? s_[k] : '\0'; };
  // Digits with single underscores between them; `i` is on a digit.
  auto decimal_tail = [&]() {
    for (;;) {
      while (is_digit(at(i))) ++i;
      if (at(i) != '_') return;
      ++i;
      if (!is_digit(at(i))) fail(i, "invalid decimal literal");
    }
  };
  auto based_digits = [&](auto is_valid_digit, const char* kind, bool report_bad_digit) {
    // `i` is just past the base letter.
    do {
      if (at(i) == '_') ++i;
      if (!is_valid_digit(at(i))) {
        if (report_bad_digit && is_digit(at(i))) fail(i, fmt::format("invalid digit '{}' in {} literal", at(i), kind));
        fail(i, fmt::format("invalid {} literal", kind));
      }
      while (is_valid_digit(at(i))) ++i;
    } while (at(i) == '_');
    if (report_bad_digit && is_digit(at(i))) fail(i, fmt::format("invalid digit '{}' in {} literal", at(i), kind));
    verify_end_of_number(i, kind);
    emit_significant(TokenKind::Number, begin, i);
    pos_ = i;
  };

  enum class Next { Done, Fraction, Exponent, Imaginary } next = Next::Done;
  if (at(i) == '.') {
    ++i;
    next = Next::Fraction;  // `.5`: lex_code_token checked the digit
  } else if (at(i) == '0') {
    ++i;
    char b = static_cast<char>(at(i) | 0x20);
    if (b == 'x') {
      ++i;
      return based_digits([](char c) { return has_class(c, kHexDigit); }, "hexadecimal", false);
    }
    if (b == 'o') {
      ++i;
      return based_digits([](char c) { return c >= '0' && c <= '7'; }, "octal", true);
    }
    if (b == 'b') {
      ++i;
      return based_digits([](char c) { return c == '0' || c == '1'; }, "binary", true);
    }
    bool nonzero = false;
    for (;;) {
      if (at(i) == '_') {
        ++i;
        if (!is_digit(at(i))) fail(i, "invalid decimal literal");
      }
      if (at(i) != '0') break;
      ++i;
    }
    if (is_digit(at(i))) {
      nonzero = true;
      decimal_tail();
    }
    char c = at(i);
    if (c == '.') {
      ++i;
      next = Next::Fraction;
    } else if (c == 'e' || c == 'E') {
      next = Next::Exponent;
    } else if (c == 'j' || c == 'J') {
      next = Next::Imaginary;
    } else if (nonzero) {
      fail(begin, "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers");
    }
  } else {
    decimal_tail();
    char c = at(i);
    if (c == '.') {
      ++i;
      next = Next::Fraction;
    } else if (c == 'e' || c == 'E') {
      next = Next::Exponent;
    } else if (c == 'j' || c == 'J') {
      next = Next::Imaginary;
    }
  }
  if (next == Next::Fraction) {
    if (is_digit(at(i))) decimal_tail();
    char c = at(i);
    next = (c == 'e' || c == 'E') ? Next::Exponent : (c == 'j' || c == 'J') ? Next::Imaginary : Next::Done;
  }
  if (next == Next::Exponent) {
    const uint32_t e = i++;
    if (at(i) == '+' || at(i) == '-') {
      ++i;
      if (!is_digit(at(i))) fail(i, "invalid decimal literal");
    } else if (!is_digit(at(i))) {
      // "1else": the number ends before the letter.
      verify_end_of_number(e, "decimal");
      emit_significant(TokenKind::Number, begin, e);
      pos_ = e;
      return;
    }
    decimal_tail();
    char c = at(i);
    next = (c == 'j' || c == 'J') ? Next::Imaginary : Next::Done;
  }
  if (next == Next::Imaginary) {
    ++i;
    verify_end_of_number(i, "imaginary");
  } else {
    verify_end_of_number(i, "decimal");
  }
  emit_significant(TokenKind::Number, begin, i);
  pos_ = i;
}

// A string literal starting at `start` (its prefix) with the quote at
// `quote_pos`. Plain strings become one String token; f-strings open an
// FString scope and are continued by lex_fstring_text().
void Lexer::lex_string(uint32_t start, uint32_t quote_pos, bool is_fstring, bool is_raw) {
  const char quote = s_[quote_pos];
  const bool triple = quote_pos + 2 < n_ && s_[quote_pos + 1] == quote && s_[quote_pos + 2] == quote;
  uint32_t i = quote_pos + (triple ? 3 : 1);
  if (is_fstring) {
    if (scopes_.size() >= kMaxNesting) fail(start, "too many nested parentheses");
    emit_significant(TokenKind::FStringStart, start, i);
    OpenScope scope{Scope::FString, start};
    scope.quote = quote;
    scope.triple = triple;
    scope.raw = is_raw;
    scopes_.push_back(scope);
    pos_ = i;
    return;
  }
  if (!triple && quote_pos + 1 < n_ && s_[quote_pos + 1] == quote) {  // empty ''
    emit_significant(TokenKind::String, start, quote_pos + 2);
    pos_ = quote_pos + 2;
    return;
  }
  for (;;) {
    // Jump to the next byte that matters.
    while (i < n_) {
      char c = s_[i];
      if (c == quote || c == '\\' || c == '\n' || c == '\r') break;
      ++i;
    }
    if (i >= n_) {
      fail(start, triple ? fmt::format("unterminated triple-quoted string literal (detected at line {})", last_line())
                         : fmt::format("unterminated string literal (detected at line {})", line_of(n_ > 0 ? n_ - 1 : 0)));
    }
    char c = s_[i];
    if (c == '\\') {
      i += (i + 2 < n_ && s_[i + 1] == '\r' && s_[i + 2] == '\n') ? 3 : 2;
      if (i > n_) i = n_;
      continue;
    }
    if (c == quote) {
      if (!triple) {
        ++i;
        break;
      }
      if (i + 2 < n_ && s_[i + 1] == quote && s_[i + 2] == quote) {
        i += 3;
        break;
      }
      ++i;
      continue;
    }
    // A line end.
    if (!triple) fail(start, fmt::format("unterminated string literal (detected at line {})", line_of(start)));
    ++i;
  }
  emit_significant(TokenKind::String, start, i);
  pos_ = i;
}

bool Lexer::at_fstring_end(uint32_t i, const OpenScope& f) const {
  if (s_[i] != f.quote) return false;
  return !f.triple || (i + 2 < n_ && s_[i + 1] == f.quote && s_[i + 2] == f.quote);
}

// `i` is on a backslash in f-string text; returns where the escape ends.
// Braces after a backslash are not escaped by it: they stay field markers.
uint32_t Lexer::skip_escape_in_fstring(uint32_t i, const OpenScope& f) const {
  if (i + 1 >= n_) return i + 1;
  char d = s_[i + 1];
  if (d == '{' || d == '}') return i + 1;
  if (!f.raw && d == 'N' && i + 2 < n_ && s_[i + 2] == '{') {
    // \N{NAME}: the braces belong to the escape.
    uint32_t k = i + 3;
    while (k < n_ && s_[k] != '}' && s_[k] != f.quote && s_[k] != '\n' && s_[k] != '\r') ++k;
    return (k < n_ && s_[k] == '}') ? k + 1 : k;
  }
  if (d == '\r' && i + 2 < n_ && s_[i + 2] == '\n') return i + 3;
  return i + 2;
}

// Literal text of an f-string up to the next replacement field or the
// closing quote. "{{" and "}}" stay inside the FStringMiddle text.
void Lexer::lex_fstring_text() {
  const OpenScope f = scopes_.back();
  const uint32_t begin = pos_;
  uint32_t i = pos_;
  auto unterminated = [&]() {
    fail(f.open_offset, f.triple ? fmt::format("unterminated triple-quoted f-string literal (detected at line {})",
                                               last_line())
                                 : fmt::format("unterminated f-string literal (detected at line {})",
                                               line_of(i < n_ ? i : (n_ > 0 ? n_ - 1 : 0))));
  };
  for (;;) {
    if (i >= n_) unterminated();
    char c = s_[i];
    if (c == f.quote && at_fstring_end(i, f)) {
      if (i > begin) emit(TokenKind::FStringMiddle, begin, i);
      uint32_t end = i + (f.triple ? 3 : 1);
      emit_significant(TokenKind::FStringEnd, i, end);
      scopes_.pop_back();
      pos_ = end;
      return;
    }
    switch (c) {
      case '\\':
        i = skip_escape_in_fstring(i, f);
        continue;
      case '{':
        if (i + 1 < n_ && s_[i + 1] == '{') {
          i += 2;
          continue;
        }
        if (i > begin) emit(TokenKind::FStringMiddle, begin, i);
        pos_ = i;
        open_scope(Scope::Field, i, Op::LBrace);
        return;
      case '}':
        if (i + 1 < n_ && s_[i + 1] == '}') {
          i += 2;
          continue;
        }
        fail(i, "f-string: single '}' is not allowed");
      case '\n':
      case '\r':
        if (!f.triple) unterminated();
        ++i;
        continue;
      default:
        ++i;
    }
  }
}

// The format spec after a field's top-level ':' runs to the field's '}';
// a '{' in it opens a nested field.
void Lexer::lex_format_spec() {
  const OpenScope& field = scopes_.back();
  const OpenScope f = scopes_[field.fstring_index];
  const uint32_t begin = pos_;
  uint32_t i = pos_;
  for (;;) {
    if (i >= n_) {
      fail(f.open_offset, f.triple ? fmt::format("unterminated triple-quoted f-string literal (detected at line {})",
                                                 last_line())
                                   : fmt::format("unterminated f-string literal (detected at line {})", last_line()));
    }
    char c = s_[i];
    if (c == '{' || c == '}') {
      if (i > begin) emit(TokenKind::FStringMiddle, begin, i);
      pos_ = i;
      if (c == '{') {
        open_scope(Scope::Field, i, Op::LBrace);
      } else {
        close_scope('}', i, Op::RBrace);
      }
      return;
    }
    if (c == f.quote && at_fstring_end(i, f)) fail(i, "f-string: expecting '}'");
    if (c == '\\') {
      i = skip_escape_in_fstring(i, f);
      continue;
    }
    if ((c == '\n' || c == '\r') && !f.triple) {
      fail(f.open_offset, fmt::format("unterminated f-string literal (detected at line {})", line_of(i)));
    }
    ++i;
  }
}

void Lexer::open_scope(Scope kind, uint32_t offset, Op op) {
  if (scopes_.size() >= kMaxNesting) fail(offset, "too many nested parentheses");
  OpenScope scope{kind, offset};
  if (kind == Scope::Field) {
    // The field's f-string is the nearest FString below it.
    uint32_t k = static_cast<uint32_t>(scopes_.size());
    while (k > 0 && scopes_[k - 1].kind != Scope::FString) --k;
    scope.fstring_index = k - 1;
  }
  scopes_.push_back(scope);
  emit_significant(TokenKind::Op, offset, offset + 1, op);
  pos_ = offset + 1;
}

char opener_char(Scope kind) {
  switch (kind) {
    case Scope::Paren: return '(';
    case Scope::Bracket: return '[';
    default: return '{';
  }
}

void Lexer::close_scope(char closer, uint32_t offset, Op op) {
  if (scopes_.empty()) fail(offset, fmt::format("unmatched '{}'", closer));
  const OpenScope& top = scopes_.back();
  char expected = top.kind == Scope::Paren ? ')' : top.kind == Scope::Bracket ? ']' : '}';
  if (closer != expected) {
    if (top.kind == Scope::Field) fail(offset, fmt::format("f-string: unmatched '{}'", closer));
    int open_line = line_of(top.open_offset);
    if (open_line != line_of(offset)) {
      fail(offset, fmt::format("closing parenthesis '{}' does not match opening parenthesis '{}' on line {}", closer,
                               opener_char(top.kind), open_line));
    }
    fail(offset, fmt::format("closing parenthesis '{}' does not match opening parenthesis '{}'", closer,
                             opener_char(top.kind)));
  }
  scopes_.pop_back();
  emit_significant(TokenKind::Op, offset, offset + 1, op);
  pos_ = offset + 1;
}

void Lexer::lex_operator() {
  const uint32_t b = pos_;
  auto at = [&](uint32_t k) -> char { return b + k < n_ ? s_[b + k] : '\0'; };
  auto op = [&](Op o, uint32_t len) {
    emit_significant(TokenKind::Op, b, b + len, o);
    pos_ = b + len;
  };
  const char c1 = at(1);
  switch (at(0)) {
    case '(': return open_scope(Scope::Paren, b, Op::LPar);
    case '[': return open_scope(Scope::Bracket, b, Op::LSqb);
    case '{': return open_scope(Scope::Brace, b, Op::LBrace);
    case ')': return close_scope(')', b, Op::RPar);
    case ']': return close_scope(']', b, Op::RSqb);
    case '}': return close_scope('}', b, Op::RBrace);
    case ':':
      // Inside a replacement field, a top-level ':' starts the format spec.
      if (!scopes_.empty() && scopes_.back().kind == Scope::Field) {
        scopes_.back().in_format_spec = true;
        return op(Op::Colon, 1);
      }
      return c1 == '=' ? op(Op::ColonEqual, 2) : op(Op::Colon, 1);
    case ',': return op(Op::Comma, 1);
    case ';': return op(Op::Semi, 1);
    case '.': return (c1 == '.' && at(2) == '.') ? op(Op::Ellipsis, 3) : op(Op::Dot, 1);
    case '~': return op(Op::Tilde, 1);
    case '!': return c1 == '=' ? op(Op::NotEqual, 2) : op(Op::Exclamation, 1);
    case '=': return c1 == '=' ? op(Op::EqEqual, 2) : op(Op::Equal, 1);
    case '+': return c1 == '=' ? op(Op::PlusEqual, 2) : op(Op::Plus, 1);
    case '-':
      if (c1 == '>') return op(Op::RArrow, 2);
      return c1 == '=' ? op(Op::MinEqual, 2) : op(Op::Minus, 1);
    case '*':
      if (c1 == '*') return at(2) == '=' ? op(Op::DoubleStarEqual, 3) : op(Op::DoubleStar, 2);
      return c1 == '=' ? op(Op::StarEqual, 2) : op(Op::Star, 1);
    case '/':
      if (c1 == '/') return at(2) == '=' ? op(Op::DoubleSlashEqual, 3) : op(Op::DoubleSlash, 2);
      return c1 == '=' ? op(Op::SlashEqual, 2) : op(Op::Slash, 1);
    case '%': return c1 == '=' ? op(Op::PercentEqual, 2) : op(Op::Percent, 1);
    case '&': return c1 == '=' ? op(Op::AmperEqual, 2) : op(Op::Amper, 1);
    case '|': return c1 == '=' ? op(Op::VBarEqual, 2) : op(Op::VBar, 1);
    case '^': return c1 == '=' ? op(Op::CircumflexEqual, 2) : op(Op::CircumFlex, 1);
    case '@': return c1 == '=' ? op(Op::AtEqual, 2) : op(Op::At, 1);
    case '<':
      if (c1 == '<') return at(2) == '=' ? op(Op::LeftShiftEqual, 3) : op(Op::LeftShift, 2);
      return c1 == '=' ? op(Op::LessEqual, 2) : op(Op::Less, 1);
    case '>':
      if (c1 == '>') return at(2) == '=' ? op(Op::RightShiftEqual, 3) : op(Op::RightShift, 2);
      return c1 == '=' ? op(Op::GreaterEqual, 2) : op(Op::Greater, 1);
    default: fail_invalid_character(b);
  }
}

void Lexer::finish() {
  if (!scopes_.empty()) {
    const OpenScope& top = scopes_.back();
    if (top.kind == Scope::FString || top.kind == Scope::Field) {
      const OpenScope& f = top.kind == Scope::FString ? top : scopes_[top.fstring_index];
      fail(f.open_offset, f.triple ? fmt::format("unterminated triple-quoted f-string literal (detected at line {})",
                                                 last_line())
                                   : fmt::format("unterminated f-string literal (detected at line {})", last_line()));
    }
    fail(top.open_offset, fmt::format("'{}' was never closed", opener_char(top.kind)));
  }
  if (line_has_tokens_) emit(TokenKind::Newline, n_, n_);
  for (; indent_depth_ > 0; --indent_depth_) emit(TokenKind::Dedent, n_, n_);
  emit(TokenKind::EndMarker, n_, n_);
}

}  // namespace

void throw_syntax_error(const SourceFile& source, uint32_t offset, std::string message) {
  LineCol lc = source.line_col(offset);
  throw SyntaxError(Diagnostic{source.path(), lc.line, lc.col + 1, std::move(message)});
}

std::vector<Token> tokenize(const SourceFile& source) { return Lexer(source).run(); }

}  // namespace npufuse::frontend
