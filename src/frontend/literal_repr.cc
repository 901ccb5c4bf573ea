// Python's repr() of str and bytes values, character for character.
#include <fmt/format.h>

#include "frontend/literal.h"
#include "frontend/unicode_tables.h"
#include "frontend/utf8.h"

namespace npufuse::frontend {

namespace {

// repr() quotes with ' unless the value holds ' and no ".
template <class Seq>
char choose_quote(const Seq& value) {
  bool has_single = false, has_double = false;
  for (auto c : value) {
    has_single |= c == '\'';
    has_double |= c == '"';
  }
  return (has_single && !has_double) ? '"' : '\'';
}

// Escapes shared by str and bytes; returns false when `c` needs more.
bool append_common_escape(std::string& out, uint32_t c, char quote) {
  switch (c) {
    case '\\': out += "\\\\"; return true;
    case '\t': out += "\\t"; return true;
    case '\n': out += "\\n"; return true;
    case '\r': out += "\\r"; return true;
    default: break;
  }
  if (c == static_cast<uint32_t>(quote)) {
    out.push_back('\\');
    out.push_back(quote);
    return true;
  }
  if (c < 0x20 || c == 0x7F) {
    out += fmt::format("\\x{:02x}", c);
    return true;
  }
  return false;
}

}  // namespace

std::string repr_str(std::u32string_view text) {
  const char quote = choose_quote(text);
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back(quote);
  for (char32_t ch : text) {
    uint32_t c = static_cast<uint32_t>(ch);
    if (append_common_escape(out, c, quote)) continue;
    if (c < 0x7F || is_printable(c)) {
      append_utf8(out, c);
    } else if (c <= 0xFF) {
      out += fmt::format("\\x{:02x}", c);
    } else if (c <= 0xFFFF) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += fmt::format("\\U{:08x}", c);
    }
  }
  out.push_back(quote);
  return out;
}

std::string repr_bytes(std::string_view bytes) {
  const char quote = choose_quote(bytes);
  std::string out = "b";
  out.reserve(bytes.size() + 3);
  out.push_back(quote);
  for (char ch : bytes) {
    uint32_t c = static_cast<unsigned char>(ch);
    if (append_common_escape(out, c, quote)) continue;
    if (c >= 0x80) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out.push_back(ch);
    }
  }
  out.push_back(quote);
  return out;
}

}  // namespace npufuse::frontend
