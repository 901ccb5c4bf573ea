// libFuzzer entry point for the frontend: lexer, literal decoding and repr,
// parser and AST dump. Invalid input must end in SyntaxError, never in a
// crash; the lexer must also keep its lossless promise (tokens in order,
// gaps only whitespace), which is checked here on every input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "frontend/ast_dump.h"
#include "frontend/lexer.h"
#include "frontend/literal.h"
#include "frontend/parser.h"

namespace {

using namespace npufuse::frontend;

void check_lossless(const SourceFile& src, const std::vector<Token>& tokens) {
  uint32_t at = 0;
  for (const Token& t : tokens) {
    if (t.begin < at || t.end < t.begin || t.end > src.text().size()) std::abort();
    for (uint32_t i = at; i < t.begin; ++i) {
      char c = src.text()[i];
      if (c != ' ' && c != '\t' && c != '\f') std::abort();
    }
    at = t.end;
  }
  if (at != src.text().size()) std::abort();
}

void exercise_literals(const SourceFile& src, const std::vector<Token>& tokens) {
  for (const Token& t : tokens) {
    std::string_view text = token_text(src, t);
    try {
      if (t.kind == TokenKind::String) {
        if (string_prefix(text).bytes) {
          repr_bytes(decode_bytes_token(src, t));
        } else {
          std::u32string value = decode_str_token(src, t);
          repr_str(value);
          if (from_utf8(to_utf8(value)) != value) std::abort();
        }
      } else if (t.kind == TokenKind::FStringMiddle) {
        repr_str(decode_fstring_text(text, false));
        repr_str(decode_fstring_text(text, true));
      } else if (t.kind == TokenKind::Number) {
        repr_number_literal(text);
      }
    } catch (const SyntaxError&) {
    } catch (const LiteralError&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  SourceFile src("fuzz.py", bytes);
  try {
    std::vector<Token> tokens = tokenize(src);
    if (tokens.empty() || tokens.back().kind != TokenKind::EndMarker) std::abort();
    check_lossless(src, tokens);
    exercise_literals(src, tokens);
  } catch (const SyntaxError&) {
    return 0;  // the parser would stop at the same lexical error
  }
  try {
    auto parsed = parse_file("fuzz.py", std::move(bytes));
    std::string out;
    dump_ast(parsed->module, out);
  } catch (const SyntaxError&) {
  } catch (const LiteralError&) {
  }
  return 0;
}
