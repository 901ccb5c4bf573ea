#pragma once
// Unicode character properties the frontend needs, from tables generated
// by tools/gen_unicode_tables.py (Unicode version of CPython 3.11).
#include <cstdint>
#include <optional>
#include <string_view>

namespace npufuse::frontend {

// str.isprintable() for one code point: what repr() leaves unescaped.
bool is_printable(uint32_t code_point);

// May the code point start / continue an identifier (PEP 3131)?
bool is_identifier_start(uint32_t code_point);
bool is_identifier_continue(uint32_t code_point);

// The code point named `name` in a "\N{name}" escape (case-insensitive),
// or nothing. Name aliases (e.g. "LINE FEED") are not in the table.
std::optional<uint32_t> lookup_unicode_name(std::string_view name);

}  // namespace npufuse::frontend
