#include "model/ast_walk.h"

#include <type_traits>

namespace npufuse::model {

namespace {

using namespace frontend::ast;
using frontend::Span;

// The frontend's generated per-node field list (written for ast.dump) drives
// this walker too, so a new node kind needs no change here.
enum class FieldRule { required, optional, omit_empty };

// Calls `f` on each child of a node; `F` is any callable taking a node.
template <class F>
class ChildVisitor {
 public:
  explicit ChildVisitor(F& f) : f_(f) {}

  void node(const Node* node) {
    switch (node->kind) {
#define NPUFUSE_AST_DUMP_CASES
#include "frontend/ast_nodes.inc"
#undef NPUFUSE_AST_DUMP_CASES
    }
  }

 private:
  void open(const char*) {}
  void close(bool, const Node*) {}

  template <class T>
  void field(const char*, T* p, FieldRule) {
    if constexpr (std::is_base_of_v<Node, T>) {
      if (p) f_(p);
    }
  }
  template <class T>
  void field(const char*, const Span<T*>& s, FieldRule) {
    if constexpr (std::is_base_of_v<Node, T>) {
      for (T* p : s)
        if (p) f_(p);
    }
  }
  template <class T>
  void field(const char*, const T&, FieldRule) {}

  F& f_;
};

// The pre-order walk, recursing without a std::function per node.
struct Walker {
  const std::function<bool(const Node*)>& visit;
  void operator()(const Node* n) {
    if (!visit(n)) return;
    ChildVisitor<Walker> children(*this);
    children.node(n);
  }
};

}  // namespace

void for_each_child(const ast::Node* n, const std::function<void(const ast::Node*)>& f) {
  if (!n) return;
  ChildVisitor<const std::function<void(const ast::Node*)>> v(f);
  v.node(n);
}

void walk(const ast::Node* root, const std::function<bool(const ast::Node*)>& visit) {
  if (!root) return;
  Walker w{visit};
  w(root);
}

}  // namespace npufuse::model
