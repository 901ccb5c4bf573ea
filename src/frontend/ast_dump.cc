#include "frontend/ast_dump.h"

#include <vector>

namespace npufuse::frontend {

namespace {

using namespace ast;

// How ast.dump treats a field that holds None or an empty list.
enum class FieldRule {
  required,    // always printed
  optional,    // `?` in the ASDL: omitted when None
  omit_empty,  // 3.12 additions: omitted when empty, so 3.11 output is unchanged
};

class Dumper {
 public:
  explicit Dumper(std::string& out) : out_(out) {}

  void node(const Node* node) {
    if (!node) {
      out_ += "None";
      return;
    }
    switch (node->kind) {
#define NPUFUSE_AST_DUMP_CASES
#include "frontend/ast_nodes.inc"
#undef NPUFUSE_AST_DUMP_CASES
    }
  }

 private:
  void open(const char* name) {
    out_ += name;
    out_ += '(';
    first_.push_back(true);
  }
  void separate() {
    if (!first_.back()) out_ += ", ";
    first_.back() = false;
  }
  void label(const char* name) {
    separate();
    out_ += name;
    out_ += '=';
  }
  void close(bool with_positions, const Node* n) {
    if (with_positions) {
      label("lineno");
      number(n->lineno);
      label("col_offset");
      number(n->col_offset);
      label("end_lineno");
      number(n->end_lineno);
      label("end_col_offset");
      number(n->end_col_offset);
    }
    first_.pop_back();
    out_ += ')';
  }
  void number(int64_t v) { out_ += std::to_string(v); }
  void identifier(std::string_view s) {
    out_ += '\'';
    out_ += s;
    out_ += '\'';
  }

  template <class T>
  void field(const char* name, T* const& child, FieldRule rule) {
    if (!child && rule == FieldRule::optional) return;
    label(name);
    node(child);
  }
  template <class T>
  void field(const char* name, const Span<T*>& list, FieldRule rule) {
    if (list.empty() && rule == FieldRule::omit_empty) return;
    label(name);
    out_ += '[';
    for (uint32_t i = 0; i < list.size; ++i) {
      if (i) out_ += ", ";
      node(list[i]);
    }
    out_ += ']';
  }
  void field(const char* name, const Span<std::string_view>& list, FieldRule) {
    label(name);
    out_ += '[';
    for (uint32_t i = 0; i < list.size; ++i) {
      if (i) out_ += ", ";
      identifier(list[i]);
    }
    out_ += ']';
  }
  void field(const char* name, const Span<cmpop>& list, FieldRule) {
    label(name);
    out_ += '[';
    for (uint32_t i = 0; i < list.size; ++i) {
      if (i) out_ += ", ";
      out_ += cmpop_names[static_cast<int>(list[i])];
      out_ += "()";
    }
    out_ += ']';
  }
  void field(const char* name, std::string_view s, FieldRule rule) {
    if (!present(s) && rule == FieldRule::optional) return;
    label(name);
    identifier(s);
  }
  void field(const char* name, int32_t v, FieldRule) {
    label(name);
    number(v);
  }
  void field(const char* name, const ConstantValue& v, FieldRule) {
    label(name);
    out_ += constant_repr(v);
  }
  template <class E>
  void enum_field(const char* name, const char* const* names, E v) {
    label(name);
    out_ += names[static_cast<int>(v)];
    out_ += "()";
  }
  void field(const char* name, expr_context v, FieldRule) { enum_field(name, expr_context_names, v); }
  void field(const char* name, boolop v, FieldRule) { enum_field(name, boolop_names, v); }
  void field(const char* name, operator_ v, FieldRule) { enum_field(name, operator__names, v); }
  void field(const char* name, unaryop v, FieldRule) { enum_field(name, unaryop_names, v); }

  std::string& out_;
  std::vector<bool> first_;
};

}  // namespace

void dump_ast(const ast::Node* node, std::string& out) { Dumper(out).node(node); }

std::string dump_ast(const ast::Node* node) {
  std::string out;
  dump_ast(node, out);
  return out;
}

}  // namespace npufuse::frontend
