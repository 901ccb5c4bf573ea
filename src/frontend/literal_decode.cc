// Decoding of string and bytes literals: escapes, raw strings, line ends.
#include <fmt/format.h>

#include "frontend/lexer.h"
#include "frontend/literal.h"
#include "frontend/unicode_tables.h"
#include "frontend/utf8.h"

namespace npufuse::frontend {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

enum class LiteralKind { Str, Bytes };

// Writes code points (str) or bytes (bytes) for one literal body.
// `braces_doubled` is set for f-string text, where "{{" and "}}" stand for
// one brace. `base` is the body's offset inside the decoded token, so
// LiteralError offsets point into the token.
template <class Out>
void decode_body(std::string_view body, bool raw, LiteralKind kind, bool braces_doubled, size_t base, Out& out) {
  const bool is_bytes = kind == LiteralKind::Bytes;
  auto unicode_error = [&](size_t from, size_t to, std::string_view what) {
    throw LiteralError(base + from,
                       fmt::format("(unicode error) 'unicodeescape' codec can't decode bytes in position {}-{}: {}",
                                   from, to, what));
  };
  const size_t n = body.size();
  size_t i = 0;
  while (i < n) {
    const char c = body[i];
    if (c == '\r') {  // CRLF and CR read as LF
      out.push_back('\n');
      i += (i + 1 < n && body[i + 1] == '\n') ? 2 : 1;
      continue;
    }
    if (braces_doubled && (c == '{' || c == '}') && i + 1 < n && body[i + 1] == c) {
      out.push_back(static_cast<unsigned char>(c));
      i += 2;
      continue;
    }
    if (static_cast<unsigned char>(c) >= 0x80) {
      if (is_bytes) throw LiteralError(base + i, "bytes can only contain ASCII literal characters");
      uint32_t cp = 0;
      int len = decode_utf8(body, i, &cp);
      if (len == 0) throw LiteralError(base + i, "invalid UTF-8 in string literal");
      out.push_back(cp);
      i += len;
      continue;
    }
    if (c != '\\' || raw || i + 1 >= n) {
      out.push_back(static_cast<unsigned char>(c));
      ++i;
      continue;
    }
    // An escape sequence; `i` is on the backslash.
    const size_t start = i;
    const char d = body[i + 1];
    i += 2;
    switch (d) {
      case '\n': break;  // backslash-newline joins the lines
      case '\r':
        if (i < n && body[i] == '\n') ++i;
        break;
      case '\\': case '\'': case '"': out.push_back(static_cast<unsigned char>(d)); break;
      case 'a': out.push_back(7); break;
      case 'b': out.push_back(8); break;
      case 'f': out.push_back(12); break;
      case 'n': out.push_back(10); break;
      case 'r': out.push_back(13); break;
      case 't': out.push_back(9); break;
      case 'v': out.push_back(11); break;
      case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
        uint32_t value = static_cast<uint32_t>(d - '0');
        for (int k = 0; k < 2 && i < n && body[i] >= '0' && body[i] <= '7'; ++k) value = value * 8 + (body[i++] - '0');
        out.push_back(is_bytes ? (value & 0xFF) : value);
        break;
      }
      case 'x': {
        int hi = i < n ? hex_value(body[i]) : -1;
        int lo = i + 1 < n ? hex_value(body[i + 1]) : -1;
        if (hi < 0 || lo < 0) {
          if (is_bytes) throw LiteralError(base + start, fmt::format("(value error) invalid \\x escape at position {}", start));
          unicode_error(start, std::min(n, i + (hi < 0 ? 0 : 1)) - 1, "truncated \\xXX escape");
        }
        out.push_back(static_cast<uint32_t>(hi * 16 + lo));
        i += 2;
        break;
      }
      case 'u':
      case 'U':
      case 'N':
        if (is_bytes) {  // not escapes in bytes: kept as written
          out.push_back('\\');
          out.push_back(static_cast<unsigned char>(d));
          break;
        }
        if (d == 'N') {
          size_t close = i < n && body[i] == '{' ? body.find('}', i) : std::string_view::npos;
          if (close == std::string_view::npos || close == i + 1) {
            unicode_error(start, std::min(n, i + 1) - 1, "malformed \\N character escape");
          }
          auto cp = lookup_unicode_name(body.substr(i + 1, close - i - 1));
          if (!cp) unicode_error(start, close, "unknown Unicode character name");
          out.push_back(*cp);
          i = close + 1;
        } else {
          const int digits = d == 'u' ? 4 : 8;
          uint32_t value = 0;
          for (int k = 0; k < digits; ++k) {
            int h = i < n ? hex_value(body[i]) : -1;
            if (h < 0) {
              unicode_error(start, (i < n ? i : n) - 1,
                            d == 'u' ? "truncated \\uXXXX escape" : "truncated \\UXXXXXXXX escape");
            }
            value = value * 16 + static_cast<uint32_t>(h);
            ++i;
          }
          if (value > 0x10FFFF) unicode_error(start, i - 1, "illegal Unicode character");
          out.push_back(value);
        }
        break;
      default:
        // An unknown escape keeps its backslash; the character after it is
        // read normally on the next round.
        out.push_back('\\');
        i = start + 1;
        break;
    }
  }
}

struct ByteSink {
  std::string& s;
  void push_back(uint32_t b) { s.push_back(static_cast<char>(b)); }
};

}  // namespace

StringPrefix string_prefix(std::string_view token_text) {
  StringPrefix p;
  size_t i = 0;
  while (i < token_text.size() && token_text[i] != '\'' && token_text[i] != '"') {
    switch (token_text[i] | 0x20) {
      case 'r': p.raw = true; break;
      case 'b': p.bytes = true; break;
      case 'f': p.fstring = true; break;
      default: break;  // 'u'
    }
    ++i;
  }
  p.length = i;
  return p;
}

std::string_view string_body(std::string_view token_text) {
  std::string_view rest = token_text.substr(string_prefix(token_text).length);
  if (rest.empty()) return rest;
  const char q = rest[0];
  size_t quote_len = (rest.size() >= 6 && rest[1] == q && rest[2] == q) ? 3 : 1;
  if (rest.size() < 2 * quote_len) return {};
  return rest.substr(quote_len, rest.size() - 2 * quote_len);
}

std::u32string decode_str_literal(std::string_view token_text) {
  StringPrefix p = string_prefix(token_text);
  std::string_view body = string_body(token_text);
  std::u32string out;
  out.reserve(body.size());
  decode_body(body, p.raw, LiteralKind::Str, false, static_cast<size_t>(body.data() - token_text.data()), out);
  return out;
}

std::string decode_bytes_literal(std::string_view token_text) {
  StringPrefix p = string_prefix(token_text);
  std::string_view body = string_body(token_text);
  std::string out;
  out.reserve(body.size());
  ByteSink sink{out};
  decode_body(body, p.raw, LiteralKind::Bytes, false, static_cast<size_t>(body.data() - token_text.data()), sink);
  return out;
}

std::u32string decode_fstring_text(std::string_view text, bool raw) {
  std::u32string out;
  out.reserve(text.size());
  decode_body(text, raw, LiteralKind::Str, true, 0, out);
  return out;
}

std::u32string decode_str_token(const SourceFile& source, const Token& token) {
  try {
    return decode_str_literal(token_text(source, token));
  } catch (const LiteralError& e) {
    throw_syntax_error(source, static_cast<uint32_t>(token.begin + e.offset()), e.what());
  }
}

std::string decode_bytes_token(const SourceFile& source, const Token& token) {
  try {
    return decode_bytes_literal(token_text(source, token));
  } catch (const LiteralError& e) {
    // CPython points at the literal itself for this one.
    throw_syntax_error(source, token.begin, e.what());
  }
}

std::string to_utf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : text) append_utf8(out, static_cast<uint32_t>(cp));
  return out;
}

std::u32string from_utf8(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    uint32_t cp = 0;
    int len = decode_utf8(text, i, &cp);
    if (len == 0) {
      const auto* u = reinterpret_cast<const unsigned char*>(text.data());
      if (u[i] == 0xED && i + 2 < text.size() && (u[i + 1] & 0xE0) == 0xA0 && (u[i + 2] & 0xC0) == 0x80) {
        cp = 0xD000 | (uint32_t(u[i + 1] & 0x3F) << 6) | (u[i + 2] & 0x3F);  // a WTF-8 surrogate
        len = 3;
      } else {  // not UTF-8 at all: keep the byte's value
        cp = u[i];
        len = 1;
      }
    }
    out.push_back(cp);
    i += len;
  }
  return out;
}

}  // namespace npufuse::frontend
