#include "check/expr_parser.h"

#include <fmt/format.h>

#include <charconv>

#include "frontend/ast.h"
#include "frontend/diagnostic.h"
#include "frontend/literal.h"
#include "frontend/parser.h"

namespace npufuse::check {
namespace {

namespace ast = frontend::ast;

// Turns the Python AST of a constraint into the evaluator's tree, refusing
// every construct outside the language of docs/catalog-format.md.
class Converter {
 public:
  ExprPtr convert(const ast::expr* e) {
    if (const auto* b = ast::as<ast::BoolOp>(e)) {
      auto out = node(b->op == ast::boolop::And ? ExprKind::And : ExprKind::Or, e);
      for (const ast::expr* v : b->values) out->operands.push_back(convert(v));
      return out;
    }
    if (const auto* u = ast::as<ast::UnaryOp>(e)) {
      if (u->op == ast::unaryop::UAdd) return convert(u->operand);
      if (u->op == ast::unaryop::Invert) fail(e, "'~' is not part of the constraint language");
      auto out = node(u->op == ast::unaryop::Not ? ExprKind::Not : ExprKind::Negate, e);
      out->operands.push_back(convert(u->operand));
      return out;
    }
    if (const auto* c = ast::as<ast::Compare>(e)) return convert_compare(c);
    if (const auto* b = ast::as<ast::BinOp>(e)) {
      auto out = node(ExprKind::Arith, e);
      out->arith = arith_op(b);
      out->operands.push_back(convert(b->left));
      out->operands.push_back(convert(b->right));
      return out;
    }
    if (const auto* call = ast::as<ast::Call>(e)) return convert_call(call);
    if (const auto* n = ast::as<ast::Name>(e)) {
      auto out = node(ExprKind::Name, e);
      out->name = std::string(n->id);
      return out;
    }
    if (const auto* k = ast::as<ast::Constant>(e)) return convert_constant(k);
    if (const auto* l = ast::as<ast::List>(e)) return convert_sequence(l->elts, e);
    if (const auto* t = ast::as<ast::Tuple>(e)) return convert_sequence(t->elts, e);
    fail(e, fmt::format("{} is not part of the constraint language", ast::kind_name(e->kind)));
  }

 private:
  [[noreturn]] static void fail(const ast::expr* at, const std::string& message) {
    throw ExprSyntaxError(at->col_offset + 1, message);
  }

  static ExprPtr node(ExprKind kind, const ast::expr* at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->col = at->col_offset + 1;
    return e;
  }

  static ArithOp arith_op(const ast::BinOp* b) {
    switch (b->op) {
      case ast::operator_::Add: return ArithOp::Add;
      case ast::operator_::Sub: return ArithOp::Sub;
      case ast::operator_::Mult: return ArithOp::Mul;
      case ast::operator_::Div: return ArithOp::Div;
      case ast::operator_::FloorDiv: return ArithOp::FloorDiv;
      case ast::operator_::Mod: return ArithOp::Mod;
      default:
        fail(b, fmt::format("operator {} is not part of the constraint language (+ - * / // %)",
                            ast::operator__names[static_cast<int>(b->op)]));
    }
  }

  ExprPtr convert_compare(const ast::Compare* c) {
    auto out = node(ExprKind::Compare, c);
    out->operands.push_back(convert(c->left));
    for (uint32_t i = 0; i < c->ops.size; ++i) {
      switch (c->ops[i]) {
        case ast::cmpop::Eq: out->compare_ops.push_back(CompareOp::Eq); break;
        case ast::cmpop::NotEq: out->compare_ops.push_back(CompareOp::NotEq); break;
        case ast::cmpop::Lt: out->compare_ops.push_back(CompareOp::Less); break;
        case ast::cmpop::LtE: out->compare_ops.push_back(CompareOp::LessEq); break;
        case ast::cmpop::Gt: out->compare_ops.push_back(CompareOp::Greater); break;
        case ast::cmpop::GtE: out->compare_ops.push_back(CompareOp::GreaterEq); break;
        case ast::cmpop::In: out->compare_ops.push_back(CompareOp::In); break;
        case ast::cmpop::NotIn: out->compare_ops.push_back(CompareOp::NotIn); break;
        case ast::cmpop::Is:
        case ast::cmpop::IsNot:
          fail(c->comparators[i], "'is' is not supported; use == or !=");
      }
      out->operands.push_back(convert(c->comparators[i]));
    }
    return out;
  }

  ExprPtr convert_call(const ast::Call* call) {
    const auto* fn = ast::as<ast::Name>(call->func);
    if (!fn || !is_known_function(std::string(fn->id)))
      fail(call, "unknown function; the functions are is_pow2, align, min, max, len");
    if (!call->keywords.empty()) fail(call, "keyword arguments are not part of the constraint language");
    auto out = node(ExprKind::Call, call);
    out->name = std::string(fn->id);
    for (const ast::expr* a : call->args) out->operands.push_back(convert(a));
    return out;
  }

  ExprPtr convert_sequence(const frontend::Span<ast::expr*>& items, const ast::expr* at) {
    auto out = node(ExprKind::List, at);
    for (const ast::expr* item : items) out->operands.push_back(convert(item));
    return out;
  }

  ExprPtr convert_constant(const ast::Constant* k) {
    auto out = node(ExprKind::Literal, k);
    switch (k->value.kind) {
      case ast::ConstantKind::None: break;
      case ast::ConstantKind::True: out->literal = Value(true); break;
      case ast::ConstantKind::False: out->literal = Value(false); break;
      case ast::ConstantKind::Str: out->literal = Value(ast::constant_string(k->value)); break;
      case ast::ConstantKind::Float: out->literal = Value(frontend::float_literal_value(k->value.number)); break;
      case ast::ConstantKind::Int: {
        std::string digits = frontend::int_literal_to_decimal(k->value.number);
        int64_t v = 0;
        auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
        if (ec != std::errc() || p != digits.data() + digits.size())
          fail(k, fmt::format("integer literal {} does not fit in 64 bits", digits));
        out->literal = Value(v);
        break;
      }
      default:
        fail(k, "only None, True, False, numbers and strings are constants of the constraint language");
    }
    return out;
  }
};

}  // namespace

ExprPtr parse_constraint_expression(std::string_view text) {
  std::unique_ptr<frontend::ParsedExpression> parsed;
  try {
    parsed = frontend::parse_expression(text, "<constraint>");
  } catch (const frontend::SyntaxError& e) {
    const auto& d = e.diagnostic();
    throw ExprSyntaxError(d.col > 0 ? d.col : 1, d.message);
  }
  return Converter().convert(parsed->expr);
}

}  // namespace npufuse::check
