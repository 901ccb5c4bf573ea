#pragma once
// Where in a function a chain's statements live: the innermost statement
// list (a function body, or the body of an if/elif/else arm, a loop, a with
// or a try clause) that holds every op of the chain. The rewrite replaces a
// run of that list, at that list's indentation.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "frontend/ast.h"

namespace npufuse::apply {

struct ChainBlock {
  std::vector<const frontend::ast::stmt*> statements;  // the list, in source order
  const frontend::ast::stmt* loop = nullptr;           // the innermost for/while around the list, if any
};

// `ops` are byte ranges [begin, end) inside `fn`'s body. Descends from the
// body into a compound statement while one of its clauses holds every op.
ChainBlock innermost_block(const frontend::ast::FunctionDef& fn, const std::vector<std::pair<uint32_t, uint32_t>>& ops);

// "if", "for", "while", "with", "try", "match" for a compound statement;
// empty for a simple one.
std::string compound_kind(const frontend::ast::stmt* s);

}  // namespace npufuse::apply
