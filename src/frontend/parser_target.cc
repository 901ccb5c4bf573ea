// Assignment and deletion targets: switching expressions to Store/Del
// context, and the "cannot assign to ..." errors CPython raises for the rest.
#include <string>

#include "frontend/parser_impl.h"

namespace npufuse::frontend::detail {

// The phrase CPython uses for an expression in target errors.
const char* Parser::describe(const expr* e) const {
  switch (e->kind) {
    case NodeKind::Attribute: return "attribute";
    case NodeKind::Subscript: return "subscript";
    case NodeKind::Starred: return "starred";
    case NodeKind::Name: return "name";
    case NodeKind::List: return "list";
    case NodeKind::Tuple: return "tuple";
    case NodeKind::Lambda: return "lambda";
    case NodeKind::Call: return "function call";
    case NodeKind::BoolOp:
    case NodeKind::BinOp:
    case NodeKind::UnaryOp: return "expression";
    case NodeKind::GeneratorExp: return "generator expression";
    case NodeKind::Yield:
    case NodeKind::YieldFrom: return "yield expression";
    case NodeKind::Await: return "await expression";
    case NodeKind::ListComp: return "list comprehension";
    case NodeKind::SetComp: return "set comprehension";
    case NodeKind::DictComp: return "dict comprehension";
    case NodeKind::Dict: return "dict literal";
    case NodeKind::Set: return "set display";
    case NodeKind::JoinedStr:
    case NodeKind::FormattedValue: return "f-string expression";
    case NodeKind::Constant:
      switch (static_cast<const Constant*>(e)->value.kind) {
        case ConstantKind::None: return "None";
        case ConstantKind::True: return "True";
        case ConstantKind::False: return "False";
        case ConstantKind::Ellipsis: return "ellipsis";
        default: return "literal";
      }
    case NodeKind::Compare: return "comparison";
    case NodeKind::IfExp: return "conditional expression";
    case NodeKind::NamedExpr: return "named expression";
    default: return "expression";
  }
}

void Parser::set_store(expr* e, bool del) {
  const expr_context ctx = del ? expr_context::Del : expr_context::Store;
  switch (e->kind) {
    case NodeKind::Name: static_cast<Name*>(e)->ctx = ctx; return;
    case NodeKind::Attribute: static_cast<Attribute*>(e)->ctx = ctx; return;
    case NodeKind::Subscript: static_cast<Subscript*>(e)->ctx = ctx; return;
    case NodeKind::Starred:
      if (del) error_at_node(e, "cannot delete starred");
      static_cast<Starred*>(e)->ctx = ctx;
      set_store(static_cast<Starred*>(e)->value, del);
      return;
    case NodeKind::Tuple:
      static_cast<Tuple*>(e)->ctx = ctx;
      for (expr* x : static_cast<Tuple*>(e)->elts) set_store(x, del);
      return;
    case NodeKind::List:
      static_cast<List*>(e)->ctx = ctx;
      for (expr* x : static_cast<List*>(e)->elts) set_store(x, del);
      return;
    default:
      break;
  }
  error_at_node(e, std::string(del ? "cannot delete " : "cannot assign to ") + describe(e));
}

void Parser::check_aug_target(expr* e) {
  if (as<Name>(e) || as<Attribute>(e) || as<Subscript>(e)) return;
  error_at_node(e, std::string("'") + describe(e) + "' is an illegal expression for augmented assignment");
}

}  // namespace npufuse::frontend::detail
