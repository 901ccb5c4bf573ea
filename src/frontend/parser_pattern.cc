// `match` statement patterns (PEP 634).
#include "frontend/parser_impl.h"

namespace npufuse::frontend::detail {

// case_block: "case" patterns guard? ':' block
match_case* Parser::parse_case_block() {
  advance();  // case
  auto* c = make_node<match_case>();
  c->pattern = parse_patterns();
  if (accept_kw(Kw::If)) c->guard = parse_named_expression();
  expect_op(Op::Colon, ":");
  c->body = parse_block();
  return c;
}

// patterns: open_sequence_pattern | pattern
pattern* Parser::parse_patterns() {
  const PTok& start = tok();
  pattern* first = parse_star_or_pattern();
  if (!at_op(Op::Comma)) {
    if (as<MatchStar>(first)) error_at_node(first, "invalid syntax");
    return first;
  }
  size_t mark = nodes_.mark();
  nodes_.push(first);
  while (accept_op(Op::Comma)) {
    if (at_op(Op::Colon) || at_kw(Kw::If)) break;
    nodes_.push(parse_star_or_pattern());
  }
  auto* s = make_node<MatchSequence>();
  s->patterns = commit_nodes<pattern>(mark);
  return finish(s, start);
}

// maybe_star_pattern: star_pattern | pattern
pattern* Parser::parse_star_or_pattern() {
  if (at_op(Op::Star)) {
    const PTok& star = advance();
    auto* s = make_node<MatchStar>();
    std::string_view name = expect_name();
    if (name != "_") s->name = name;
    return finish(s, star);
  }
  return parse_pattern();
}

// pattern: or_pattern 'as' pattern_capture_target | or_pattern
pattern* Parser::parse_pattern() {
  const PTok& start = tok();
  pattern* p = parse_or_pattern();
  if (!at_kw(Kw::As)) return p;
  advance();
  const PTok& name_tok = tok();
  std::string_view name = expect_name();
  if (name == "_") error_at(name_tok, "cannot use '_' as a target");
  auto* a = make_node<MatchAs>();
  a->pattern = p;
  a->name = name;
  return finish(a, start);
}

pattern* Parser::parse_or_pattern() {
  const PTok& start = tok();
  pattern* first = parse_closed_pattern();
  if (!at_op(Op::VBar)) return first;
  size_t mark = nodes_.mark();
  nodes_.push(first);
  while (accept_op(Op::VBar)) nodes_.push(parse_closed_pattern());
  auto* o = make_node<MatchOr>();
  o->patterns = commit_nodes<pattern>(mark);
  return finish(o, start);
}

// signed_number ['+'|'-' imaginary]: the literal of a value pattern.
expr* Parser::parse_signed_number() {
  const PTok& start = tok();
  expr* left;
  if (at_op(Op::Minus)) {
    advance();
    if (!at_kind(TokenKind::Number)) invalid_syntax();
    auto* u = make_node<UnaryOp>();
    u->op = unaryop::USub;
    u->operand = parse_atom();
    left = finish(u, start);
  } else {
    left = parse_atom();
  }
  if (at_op(Op::Plus) || at_op(Op::Minus)) {
    operator_ op = at_op(Op::Plus) ? operator_::Add : operator_::Sub;
    advance();
    if (!at_kind(TokenKind::Number)) invalid_syntax();
    expr* right = parse_atom();
    auto* rc = as<Constant>(right);
    if (!rc || rc->value.kind != ConstantKind::Complex) error_at_node(right, "imaginary number required in complex literal");
    auto* b = make_node<BinOp>();
    b->left = left;
    b->op = op;
    b->right = right;
    left = finish(b, start);
  }
  return left;
}

expr* Parser::parse_literal_expr_for_pattern() {
  if (at_kind(TokenKind::Number) || at_op(Op::Minus)) return parse_signed_number();
  if (at_kind(TokenKind::String) || at_kind(TokenKind::FStringStart)) {
    expr* e = parse_strings();
    if (as<JoinedStr>(e)) error_at_node(e, "patterns may only match literals and attribute lookups");
    return e;
  }
  if (at_kw(Kw::None_) || at_kw(Kw::True_) || at_kw(Kw::False_)) return parse_atom();
  return parse_name_or_attr();
}

// name_or_attr: NAME ('.' NAME)*
expr* Parser::parse_name_or_attr() {
  const PTok& start = tok();
  auto* n = make_node<Name>();
  n->id = expect_name();
  n->ctx = expr_context::Load;
  set_start(n, start);
  set_end(n, start);
  expr* e = n;
  while (at_op(Op::Dot)) {
    advance();
    auto* a = make_node<Attribute>();
    a->value = e;
    a->attr = expect_name();
    a->ctx = expr_context::Load;
    e = finish(a, start);
  }
  return e;
}

pattern* Parser::parse_closed_pattern() {
  const PTok& start = tok();
  NestingScope nesting(*this);
  nesting.enter(start);
  switch (start.kind) {
    case TokenKind::Number:
    case TokenKind::String:
    case TokenKind::FStringStart: {
      auto* v = make_node<MatchValue>();
      v->value = parse_literal_expr_for_pattern();
      set_start(v, v->value);
      set_end(v, v->value);
      return v;
    }
    case TokenKind::Keyword: {
      ConstantKind k;
      switch (start.kw) {
        case Kw::None_: k = ConstantKind::None; break;
        case Kw::True_: k = ConstantKind::True; break;
        case Kw::False_: k = ConstantKind::False; break;
        default: invalid_syntax();
      }
      advance();
      auto* s = make_node<MatchSingleton>();
      s->value.kind = k;
      return finish(s, start);
    }
    case TokenKind::Name: {
      expr* e = parse_name_or_attr();
      if (at_op(Op::LPar)) return parse_class_pattern(e);
      if (auto* n = as<Name>(e)) {
        auto* a = make_node<MatchAs>();
        if (n->id != "_") a->name = n->id;
        return finish(a, start);
      }
      auto* v = make_node<MatchValue>();
      v->value = e;
      return finish(v, start);
    }
    case TokenKind::Op:
      switch (start.op) {
        case Op::Minus: {
          auto* v = make_node<MatchValue>();
          v->value = parse_signed_number();
          return finish(v, start);
        }
        case Op::LPar: {
          advance();
          if (at_op(Op::RPar)) {
            advance();
            return finish(make_node<MatchSequence>(), start);
          }
          pattern* first = parse_star_or_pattern();
          if (at_op(Op::RPar) && !as<MatchStar>(first)) {
            advance();
            return first;  // a group: the parentheses add nothing
          }
          size_t mark = nodes_.mark();
          nodes_.push(first);
          while (accept_op(Op::Comma)) {
            if (at_op(Op::RPar)) break;
            nodes_.push(parse_star_or_pattern());
          }
          expect_op(Op::RPar, ")");
          auto* s = make_node<MatchSequence>();
          s->patterns = commit_nodes<pattern>(mark);
          return finish(s, start);
        }
        case Op::LSqb: {
          advance();
          size_t mark = nodes_.mark();
          while (!at_op(Op::RSqb)) {
            nodes_.push(parse_star_or_pattern());
            if (!accept_op(Op::Comma)) break;
          }
          expect_op(Op::RSqb, "]");
          auto* s = make_node<MatchSequence>();
          s->patterns = commit_nodes<pattern>(mark);
          return finish(s, start);
        }
        case Op::LBrace:
          return parse_mapping_pattern();
        default:
          invalid_syntax();
      }
    default:
      invalid_syntax();
  }
}

pattern* Parser::parse_mapping_pattern() {
  const PTok& start = advance();  // {
  auto* m = make_node<MatchMapping>();
  size_t key_mark = exprs_.mark(), pat_mark = nodes_.mark();
  while (!at_op(Op::RBrace)) {
    if (accept_op(Op::DoubleStar)) {
      m->rest = expect_name();
      accept_op(Op::Comma);
      break;
    }
    expr* key = parse_literal_expr_for_pattern();
    if (as<Name>(key)) invalid_syntax();
    exprs_.push(key);
    expect_op(Op::Colon, ":");
    nodes_.push(parse_pattern());
    if (!accept_op(Op::Comma)) break;
  }
  expect_op(Op::RBrace, "}");
  m->keys = exprs_.commit(key_mark, arena_);
  m->patterns = commit_nodes<pattern>(pat_mark);
  return finish(m, start);
}

pattern* Parser::parse_class_pattern(expr* cls) {
  advance();  // (
  auto* c = make_node<MatchClass>();
  c->cls = cls;
  size_t pos_mark = nodes_.mark();
  size_t name_mark = names_.mark();
  std::vector<pattern*> kwd_patterns;
  while (!at_op(Op::RPar)) {
    if (at_kind(TokenKind::Name) && is_op(peek(), Op::Equal)) {
      names_.push(text(advance()));
      advance();
      kwd_patterns.push_back(parse_pattern());
    } else {
      pattern* p = parse_pattern();
      if (!kwd_patterns.empty()) error_at_node(p, "positional patterns follow keyword patterns");
      nodes_.push(p);
    }
    if (!accept_op(Op::Comma)) break;
  }
  expect_op(Op::RPar, ")");
  c->patterns = commit_nodes<pattern>(pos_mark);
  c->kwd_attrs = names_.commit(name_mark, arena_);
  c->kwd_patterns = arena_.copy(kwd_patterns.data(), kwd_patterns.size());
  return finish(c, cls);
}

}  // namespace npufuse::frontend::detail
