#pragma once
// The lossless Python lexer (Python 3.8-3.13 lexical grammar, f-strings the
// PEP 701 way). See token.h for what the token stream covers.
#include <string_view>
#include <vector>

#include "frontend/diagnostic.h"
#include "frontend/source.h"
#include "frontend/token.h"

namespace npufuse::frontend {

// Tokenizes the whole file. The stream always ends with NEWLINE (zero-width
// when the file lacks a final line end), the pending DEDENTs (zero-width)
// and ENDMARKER. Throws SyntaxError naming file:line:col with a message
// close to CPython 3.11's on the first lexical error.
std::vector<Token> tokenize(const SourceFile& source);

// The bytes a token covers.
inline std::string_view token_text(const SourceFile& source, const Token& token) {
  return source.text().substr(token.begin, token.end - token.begin);
}

// Throws SyntaxError for `message` at byte `offset` of `source`.
[[noreturn]] void throw_syntax_error(const SourceFile& source, uint32_t offset, std::string message);

}  // namespace npufuse::frontend
