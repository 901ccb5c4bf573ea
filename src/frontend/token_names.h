#pragma once
// Printable names of token kinds, operators and keywords (for dumps,
// messages and tests).
#include <optional>
#include <string_view>

#include "frontend/token.h"

namespace npufuse::frontend {

// CPython's token module names: "NAME", "OP", "FSTRING_START", ...
std::string_view token_kind_name(TokenKind kind);
// The operator's spelling: "(", "**=", "!", ...; "" for Op::None.
std::string_view op_text(Op op);
// The keyword's spelling: "def", "None", ...; "" for Kw::None.
std::string_view keyword_text(Kw kw);
// The hard keyword spelled `word`, or Kw::None.
Kw keyword_from_text(std::string_view word);

}  // namespace npufuse::frontend
