#pragma once
// Python parser: tokens from the lexer in, typed AST (ast.h) out.
//
// Accepts what CPython 3.11's ast.parse accepts, plus the 3.12/3.13 syntax
// (PEP 695 type parameters and `type` aliases, PEP 701 f-strings). The first
// syntax error is thrown as SyntaxError naming file:line:col, with CPython's
// wording where it has one ("invalid syntax", "expected ':'", ...).
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/arena.h"
#include "frontend/ast.h"
#include "frontend/diagnostic.h"
#include "frontend/source.h"
#include "frontend/token.h"

namespace npufuse::frontend {

// A parsed file owns everything the tree points into: the source text
// (identifiers and literals are views into it), the tokens and the arena.
struct ParsedFile {
  ParsedFile(std::string path, std::string bytes) : source(std::move(path), std::move(bytes)) {}
  SourceFile source;
  std::vector<Token> tokens;
  Arena arena;
  ast::Module* module = nullptr;
  size_t node_count = 0;
};

// Throws SyntaxError on invalid input (including lexer errors).
std::unique_ptr<ParsedFile> parse_file(std::string path, std::string bytes);

// One standalone expression, e.g. a constraint written in a catalog file.
// `origin` names where the text came from in error messages.
struct ParsedExpression {
  ParsedExpression(std::string origin, std::string text) : source(std::move(origin), std::move(text)) {}
  SourceFile source;
  std::vector<Token> tokens;
  Arena arena;
  ast::expr* expr = nullptr;
};

std::unique_ptr<ParsedExpression> parse_expression(std::string_view text, std::string_view origin);

}  // namespace npufuse::frontend
