#pragma once
// UTF-8 decoding and encoding for the lexer and the literal decoder.
// Strict decoding, as CPython reads source: no overlong forms, no encoded
// surrogates, nothing above U+10FFFF.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace npufuse::frontend {

inline constexpr size_t kValidUtf8 = static_cast<size_t>(-1);

// Decodes the code point starting at text[i]. Returns its length in bytes
// (1-4), or 0 when the bytes there are not valid UTF-8.
int decode_utf8(std::string_view text, size_t i, uint32_t* code_point);

// Offset of the first byte that is not part of valid UTF-8, or kValidUtf8.
size_t find_invalid_utf8(std::string_view text);

// Appends `code_point` encoded as UTF-8. Surrogates (U+D800-U+DFFF) are
// written in the generalised form (WTF-8) so that lone surrogates coming
// from escapes such as "\ud800" survive a round trip.
void append_utf8(std::string& out, uint32_t code_point);

}  // namespace npufuse::frontend
