#pragma once
// Values of literal tokens and their Python repr(), as CPython 3.11 computes
// them: used for AST Constant values, the AST dump and docstrings.
//
// A str value is a sequence of code points (std::u32string) rather than
// UTF-8, because escapes such as "\ud800" produce lone surrogates that
// repr() must print back; to_utf8() writes them in the generalised UTF-8
// form (WTF-8). A bytes value is a std::string of raw bytes.
#include <stdexcept>
#include <string>
#include <string_view>

#include "frontend/source.h"
#include "frontend/token.h"

namespace npufuse::frontend {

// An invalid literal. `offset` is the byte offset inside the text that was
// being decoded, so callers can point at file:line:col.
class LiteralError : public std::runtime_error {
 public:
  LiteralError(size_t offset, const std::string& message) : std::runtime_error(message), offset_(offset) {}
  size_t offset() const { return offset_; }

 private:
  size_t offset_;
};

// The prefix letters of a string token ("rb", "F", ...), case-insensitive.
struct StringPrefix {
  bool raw = false;
  bool bytes = false;
  bool fstring = false;
  size_t length = 0;  // bytes before the opening quote
};
StringPrefix string_prefix(std::string_view token_text);

// The text between the quotes of a String token (prefix and quotes removed).
std::string_view string_body(std::string_view token_text);

// --- Decoding -------------------------------------------------------------
// Source line ends inside literals (CRLF, CR) read as "\n", as CPython reads
// source files. Unknown escapes such as "\d" stay as written (CPython only
// warns).

// A whole str literal token (prefix, quotes, body). Throws LiteralError.
std::u32string decode_str_literal(std::string_view token_text);
// A whole bytes literal token. Non-ASCII characters are an error, as in
// CPython ("bytes can only contain ASCII literal characters").
std::string decode_bytes_literal(std::string_view token_text);
// FStringMiddle text: escapes (unless `raw`) and "{{"/"}}" collapse to one brace.
std::u32string decode_fstring_text(std::string_view text, bool raw);
// Decodes a String token of `source`, throwing SyntaxError at file:line:col.
std::u32string decode_str_token(const SourceFile& source, const Token& token);
std::string decode_bytes_token(const SourceFile& source, const Token& token);

// UTF-8 of a decoded str; lone surrogates in the generalised (WTF-8) form.
std::string to_utf8(std::u32string_view text);
// The code points of UTF-8 text (assumed valid, e.g. an identifier).
std::u32string from_utf8(std::string_view text);

// --- Numbers -------------------------------------------------------------
// An int literal ("0x_FF", "1_000", "0o17", "0b1", arbitrarily long) as its
// decimal digits, like str(int).
std::string int_literal_to_decimal(std::string_view literal);
// A float or imaginary literal's value (the 'j' is ignored); too large
// values are inf, as in CPython.
double float_literal_value(std::string_view literal);
// Which kind of number a Number token is.
enum class NumberKind { Int, Float, Imaginary };
NumberKind number_kind(std::string_view literal);

// --- repr() -------------------------------------------------------------
std::string repr_str(std::u32string_view text);
std::string repr_bytes(std::string_view bytes);
// repr(float): shortest round-trip digits, exponent form when the decimal
// exponent is < -4 or >= 16 ("1e-05", "1e+16", "100.0", "inf").
std::string repr_float(double value);
// repr of a pure imaginary complex: "1j", "1.5j", "1e+16j", "infj".
std::string repr_imaginary(double value);
// repr of a Number token's value, as ast.dump prints it.
std::string repr_number_literal(std::string_view literal);
// How ast.dump prints the singleton constants.
inline constexpr std::string_view kReprTrue = "True";
inline constexpr std::string_view kReprFalse = "False";
inline constexpr std::string_view kReprNone = "None";
inline constexpr std::string_view kReprEllipsis = "Ellipsis";

}  // namespace npufuse::frontend
