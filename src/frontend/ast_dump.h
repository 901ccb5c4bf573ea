#pragma once
// Text form of an AST, byte-identical to CPython 3.11's
// `ast.dump(tree, include_attributes=True)` for everything 3.11 can parse.
// Newer nodes print in 3.12's style; `type_params` appears only when non-empty.
#include <string>

#include "frontend/ast.h"

namespace npufuse::frontend {

std::string dump_ast(const ast::Node* node);
void dump_ast(const ast::Node* node, std::string& out);

}  // namespace npufuse::frontend
