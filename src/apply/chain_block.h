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

// A `with` statement that only turns autocast or autograd off
// (`torch.autocast(..., enabled=False)`, `torch.no_grad()`,
// `torch.inference_mode()`, binding no name) and whose header holds none of
// `ops`. A chain that runs partly before it and ends inside it may be
// rewritten inside it: ops moved under such a context compute as they did, or
// in full precision where autocast had lowered them.
bool transparent_with(const frontend::ast::stmt* s, const std::vector<std::pair<uint32_t, uint32_t>>& ops);

// "if", "for", "while", "with", "try", "match" for a compound statement;
// empty for a simple one.
std::string compound_kind(const frontend::ast::stmt* s);

}  // namespace npufuse::apply
