#pragma once
// Generic traversal of the frontend's typed AST: every child of every node,
// in field order (the order CPython's ast.dump prints them).
#include <functional>

#include "frontend/ast.h"

namespace npufuse::model {

namespace ast = frontend::ast;
using frontend::Span;

// Calls `f` for each direct child node of `n` (null children are skipped).
void for_each_child(const ast::Node* n, const std::function<void(const ast::Node*)>& f);

// Pre-order walk from `root`; when `visit` returns false the node's subtree is
// skipped.
void walk(const ast::Node* root, const std::function<bool(const ast::Node*)>& visit);

}  // namespace npufuse::model
