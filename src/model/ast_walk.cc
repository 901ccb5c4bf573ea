#include "model/ast_walk.h"

#include <type_traits>

namespace npufuse::model {

namespace {

using namespace frontend::ast;
using frontend::Span;

// The frontend's generated per-node field list (written for ast.dump) drives
// this walker too, so a new node kind needs no change here.
enum class FieldRule { required, optional, omit_empty };

class ChildVisitor {
 public:
  explicit ChildVisitor(const std::function<void(const Node*)>& f) : f_(f) {}

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

  const std::function<void(const Node*)>& f_;
};

}  // namespace

void for_each_child(const ast::Node* n, const std::function<void(const ast::Node*)>& f) {
  if (!n) return;
  ChildVisitor v(f);
  v.node(n);
}

void walk(const ast::Node* root, const std::function<bool(const ast::Node*)>& visit) {
  if (!root) return;
  if (!visit(root)) return;
  for_each_child(root, [&](const ast::Node* c) { walk(c, visit); });
}

}  // namespace npufuse::model
