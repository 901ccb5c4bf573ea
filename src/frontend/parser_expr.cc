// Expressions: precedence climbing from star_expressions down to atoms.
#include "frontend/parser_impl.h"

namespace npufuse::frontend::detail {

bool Parser::starts_expression(const PTok& t) const {
  switch (t.kind) {
    case TokenKind::Name:
    case TokenKind::Number:
    case TokenKind::String:
    case TokenKind::FStringStart:
      return true;
    case TokenKind::Keyword:
      switch (t.kw) {
        case Kw::None_:
        case Kw::True_:
        case Kw::False_:
        case Kw::Not:
        case Kw::Lambda:
        case Kw::Await:
          return true;
        default:
          return false;
      }
    case TokenKind::Op:
      switch (t.op) {
        case Op::LPar:
        case Op::LSqb:
        case Op::LBrace:
        case Op::Minus:
        case Op::Plus:
        case Op::Tilde:
        case Op::Star:
        case Op::Ellipsis:
          return true;
        default:
          return false;
      }
    default:
      return false;
  }
}

expr* Parser::make_tuple_from(size_t mark, const PTok& start) {
  auto* t = make_node<Tuple>();
  t->elts = exprs_.commit(mark, arena_);
  t->ctx = expr_context::Load;
  return finish(t, start);
}

// star_expressions: star_expression (',' star_expression)* [',']
expr* Parser::parse_star_expressions() {
  const PTok& start = tok();
  expr* first = parse_star_expression();
  if (!at_op(Op::Comma)) return first;
  size_t mark = exprs_.mark();
  exprs_.push(first);
  while (accept_op(Op::Comma)) {
    if (!starts_expression(tok())) break;
    exprs_.push(parse_star_expression());
  }
  return last_bare_tuple_ = make_tuple_from(mark, start);
}

// star_expression: '*' bitwise_or | expression
expr* Parser::parse_star_expression() {
  if (at_op(Op::Star)) {
    const PTok& star = advance();
    auto* s = make_node<Starred>();
    s->value = parse_bitwise_or();
    s->ctx = expr_context::Load;
    return finish(s, star);
  }
  return parse_expression();
}

// star_named_expression: '*' bitwise_or | named_expression
expr* Parser::parse_star_named_expression() {
  if (at_op(Op::Star)) return parse_star_expression();
  return parse_named_expression();
}

// named_expression: NAME ':=' expression | expression !':='
expr* Parser::parse_named_expression() {
  if (at_kind(TokenKind::Name) && is_op(peek(), Op::ColonEqual)) {
    const PTok& name_tok = advance();
    auto* target = make_node<Name>();
    target->id = text(name_tok);
    target->ctx = expr_context::Store;
    set_start(target, name_tok);
    set_end(target, name_tok);
    advance();  // :=
    auto* n = make_node<NamedExpr>();
    n->target = target;
    n->value = parse_expression();
    return finish(n, name_tok);
  }
  expr* e = parse_expression();
  if (at_op(Op::ColonEqual)) error_at_node(e, std::string("cannot use assignment expressions with ") + describe(e));
  return e;
}

// expression: disjunction 'if' disjunction 'else' expression | disjunction | lambdef
expr* Parser::parse_expression() {
  NestingScope nesting(*this);
  nesting.enter(tok());
  if (at_kw(Kw::Lambda)) return parse_lambda();
  const PTok& start = tok();
  expr* body = parse_disjunction();
  if (!at_kw(Kw::If)) return body;
  advance();
  auto* n = make_node<IfExp>();
  n->body = body;
  n->test = parse_disjunction();
  if (!accept_kw(Kw::Else)) error_at(tok(), "expected 'else' after 'if' expression");
  n->orelse = parse_expression();
  return finish(n, start);
}

expr* Parser::parse_disjunction() {
  const PTok& start = tok();
  expr* first = parse_conjunction();
  if (!at_kw(Kw::Or)) return first;
  size_t mark = exprs_.mark();
  exprs_.push(first);
  while (accept_kw(Kw::Or)) exprs_.push(parse_conjunction());
  auto* b = make_node<BoolOp>();
  b->op = boolop::Or;
  b->values = exprs_.commit(mark, arena_);
  return finish(b, start);
}

expr* Parser::parse_conjunction() {
  const PTok& start = tok();
  expr* first = parse_inversion();
  if (!at_kw(Kw::And)) return first;
  size_t mark = exprs_.mark();
  exprs_.push(first);
  while (accept_kw(Kw::And)) exprs_.push(parse_inversion());
  auto* b = make_node<BoolOp>();
  b->op = boolop::And;
  b->values = exprs_.commit(mark, arena_);
  return finish(b, start);
}

expr* Parser::parse_inversion() {
  if (at_kw(Kw::Not)) {
    NestingScope nesting(*this);
    nesting.enter(tok());
    const PTok& t = advance();
    auto* u = make_node<UnaryOp>();
    u->op = unaryop::Not;
    u->operand = parse_inversion();
    return finish(u, t);
  }
  return parse_comparison();
}

expr* Parser::parse_comparison() {
  const PTok& start = tok();
  expr* left = parse_bitwise_or();
  size_t op_mark = cmpops_.mark(), expr_mark = exprs_.mark();
  for (;;) {
    const PTok& t = tok();
    cmpop op;
    if (t.kind == TokenKind::Op) {
      switch (t.op) {
        case Op::EqEqual: op = cmpop::Eq; break;
        case Op::NotEqual: op = cmpop::NotEq; break;
        case Op::Less: op = cmpop::Lt; break;
        case Op::LessEqual: op = cmpop::LtE; break;
        case Op::Greater: op = cmpop::Gt; break;
        case Op::GreaterEqual: op = cmpop::GtE; break;
        default: goto done;
      }
      advance();
    } else if (t.kind == TokenKind::Keyword) {
      if (t.kw == Kw::In) {
        op = cmpop::In;
        advance();
      } else if (t.kw == Kw::Not && is_kw(peek(), Kw::In)) {
        op = cmpop::NotIn;
        pos_ += 2;
      } else if (t.kw == Kw::Is) {
        advance();
        op = accept_kw(Kw::Not) ? cmpop::IsNot : cmpop::Is;
      } else {
        goto done;
      }
    } else {
      goto done;
    }
    cmpops_.push(op);
    exprs_.push(parse_bitwise_or());
  }
done:
  if (cmpops_.mark() == op_mark) return left;
  auto* c = make_node<Compare>();
  c->left = left;
  c->ops = cmpops_.commit(op_mark, arena_);
  c->comparators = exprs_.commit(expr_mark, arena_);
  return finish(c, start);
}

namespace {
// Binding strength of a binary operator token (0: not one), CPython's
// bitwise_or > bitwise_xor > bitwise_and > shift_expr > sum > term.
int binary_precedence(const PTok& t, operator_& op) {
  if (t.kind != TokenKind::Op) return 0;
  switch (t.op) {
    case Op::VBar: op = operator_::BitOr; return 1;
    case Op::CircumFlex: op = operator_::BitXor; return 2;
    case Op::Amper: op = operator_::BitAnd; return 3;
    case Op::LeftShift: op = operator_::LShift; return 4;
    case Op::RightShift: op = operator_::RShift; return 4;
    case Op::Plus: op = operator_::Add; return 5;
    case Op::Minus: op = operator_::Sub; return 5;
    case Op::Star: op = operator_::Mult; return 6;
    case Op::Slash: op = operator_::Div; return 6;
    case Op::DoubleSlash: op = operator_::FloorDiv; return 6;
    case Op::Percent: op = operator_::Mod; return 6;
    case Op::At: op = operator_::MatMult; return 6;
    default: return 0;
  }
}
}  // namespace

// bitwise_or down to term in one precedence-climbing loop; all of these
// operators are left-associative.
expr* Parser::parse_binary(int min_precedence) {
  const PTok& start = tok();
  expr* left = parse_factor();
  NestingScope nesting(*this);
  for (;;) {
    operator_ op;
    int precedence = binary_precedence(tok(), op);
    if (precedence == 0 || precedence < min_precedence) return left;
    nesting.enter(tok());
    advance();
    auto* b = make_node<BinOp>();
    b->left = left;
    b->op = op;
    b->right = parse_binary(precedence + 1);
    left = finish(b, start);
  }
}

expr* Parser::parse_bitwise_or() { return parse_binary(1); }

expr* Parser::parse_factor() {
  if (tok().kind == TokenKind::Op) {
    unaryop op;
    switch (tok().op) {
      case Op::Plus: op = unaryop::UAdd; break;
      case Op::Minus: op = unaryop::USub; break;
      case Op::Tilde: op = unaryop::Invert; break;
      default: return parse_power();
    }
    NestingScope nesting(*this);
    nesting.enter(tok());
    const PTok& t = advance();
    auto* u = make_node<UnaryOp>();
    u->op = op;
    u->operand = parse_factor();
    return finish(u, t);
  }
  return parse_power();
}

expr* Parser::parse_power() {
  const PTok& start = tok();
  expr* base = parse_await_primary();
  if (!at_op(Op::DoubleStar)) return base;
  NestingScope nesting(*this);
  nesting.enter(tok());
  advance();
  auto* b = make_node<BinOp>();
  b->left = base;
  b->op = operator_::Pow;
  b->right = parse_factor();
  return finish(b, start);
}

expr* Parser::parse_await_primary() {
  if (at_kw(Kw::Await)) {
    const PTok& t = advance();
    auto* a = make_node<Await>();
    a->value = parse_primary();
    return finish(a, t);
  }
  return parse_primary();
}

expr* Parser::parse_primary() {
  const PTok& start = tok();
  return parse_trailers(parse_atom(), start);
}

expr* Parser::parse_trailers(expr* e, const PTok& start) {
  NestingScope nesting(*this);
  for (;;) {
    if (at_op(Op::Dot) || at_op(Op::LPar) || at_op(Op::LSqb)) nesting.enter(tok());
    if (at_op(Op::Dot)) {
      advance();
      auto* a = make_node<Attribute>();
      a->value = e;
      a->attr = expect_name();
      a->ctx = expr_context::Load;
      e = finish(a, start);
    } else if (at_op(Op::LPar)) {
      e = parse_call(e, start);
    } else if (at_op(Op::LSqb)) {
      advance();
      auto* s = make_node<Subscript>();
      s->value = e;
      s->slice = parse_slices();
      s->ctx = expr_context::Load;
      expect_op(Op::RSqb, "]");
      e = finish(s, start);
    } else {
      return e;
    }
  }
}

expr* Parser::parse_call(expr* func, const PTok& start) {
  const PTok& open = advance();
  auto* c = make_node<Call>();
  c->func = func;
  expr* genexp = nullptr;
  parse_call_arguments(&c->args, &c->keywords, true, open, &genexp);
  return finish(c, start);
}

// args / kwargs of a call or class definition, consuming the closing ')'.
void Parser::parse_call_arguments(Span<expr*>* args, Span<keyword*>* keywords, bool allow_genexp,
                                  const PTok& open, expr** genexp_out) {
  size_t arg_mark = exprs_.mark(), kw_mark = keywords_.mark();
  bool seen_keyword = false, seen_double_star = false;
  while (!at_op(Op::RPar)) {
    const PTok& start = tok();
    if (at_op(Op::Star)) {
      advance();
      auto* s = make_node<Starred>();
      s->value = parse_expression();
      s->ctx = expr_context::Load;
      finish(s, start);
      if (seen_double_star) error_at(start, "iterable argument unpacking follows keyword argument unpacking");
      exprs_.push(s);
    } else if (at_op(Op::DoubleStar)) {
      advance();
      auto* k = make_node<keyword>();
      k->value = parse_expression();
      finish(k, start);
      keywords_.push(k);
      seen_double_star = true;
    } else if (at_kind(TokenKind::Name) && is_op(peek(), Op::Equal)) {
      advance();
      advance();
      auto* k = make_node<keyword>();
      k->arg = text(start);
      k->value = parse_expression();
      finish(k, start);
      keywords_.push(k);
      seen_keyword = true;
    } else {
      expr* e = parse_named_expression();
      if (at_kw(Kw::For) || (at_kw(Kw::Async) && is_kw(peek(), Kw::For))) {
        auto* g = make_node<GeneratorExp>();
        g->elt = e;
        g->generators = parse_comprehension_clauses();
        bool alone = allow_genexp && exprs_.mark() == arg_mark && keywords_.mark() == kw_mark && at_op(Op::RPar);
        if (!alone) error_at_node(e, "Generator expression must be parenthesized");
        set_start(g, open);
        set_end(g, tok());
        exprs_.push(g);
        if (genexp_out) *genexp_out = g;
        continue;
      }
      if (at_op(Op::Equal)) {
        error_at_node(e, "expression cannot contain assignment, perhaps you meant \"==\"?");
      }
      if (seen_double_star) error_at_node(e, "positional argument follows keyword argument unpacking");
      if (seen_keyword) error_at_node(e, "positional argument follows keyword argument");
      exprs_.push(e);
    }
    if (!accept_op(Op::Comma)) break;
  }
  if (!at_op(Op::RPar)) {
    if (at_kind(TokenKind::Newline) || at_kind(TokenKind::EndMarker)) error_at(open, "'(' was never closed");
    invalid_syntax();
  }
  advance();
  *args = exprs_.commit(arg_mark, arena_);
  *keywords = keywords_.commit(kw_mark, arena_);
}

// slices: slice !',' | ','.(slice | starred_expression)+ [',']
expr* Parser::parse_slices() {
  const PTok& start = tok();
  expr* first = at_op(Op::Star) ? parse_star_expression() : parse_slice();
  if (!at_op(Op::Comma) && !as<Starred>(first)) return first;  // a[*b] is a[(*b,)]
  size_t mark = exprs_.mark();
  exprs_.push(first);
  while (accept_op(Op::Comma)) {
    if (at_op(Op::RSqb)) break;
    exprs_.push(at_op(Op::Star) ? parse_star_expression() : parse_slice());
  }
  return make_tuple_from(mark, start);
}

// slice: [expression] ':' [expression] [':' [expression]] | named_expression
expr* Parser::parse_slice() {
  const PTok& start = tok();
  expr* lower = nullptr;
  if (!at_op(Op::Colon)) {
    lower = parse_named_expression();
    if (!at_op(Op::Colon)) return lower;
  }
  advance();  // ':'
  auto* s = make_node<Slice>();
  s->lower = lower;
  auto ends_part = [&] { return at_op(Op::Colon) || at_op(Op::Comma) || at_op(Op::RSqb); };
  if (!ends_part()) s->upper = parse_expression();
  if (accept_op(Op::Colon)) {
    if (!ends_part()) s->step = parse_expression();
  }
  return finish(s, start);
}

expr* Parser::parse_atom() {
  const PTok& t = tok();
  switch (t.kind) {
    case TokenKind::Name: {
      advance();
      auto* n = make_node<Name>();
      n->id = text(t);
      n->ctx = expr_context::Load;
      set_start(n, t);
      set_end(n, t);
      return n;
    }
    case TokenKind::Number: {
      advance();
      auto* c = make_node<Constant>();
      std::string_view s = text(t);
      ConstantKind k = ConstantKind::Int;
      if (s.size() > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X' || s[1] == 'o' || s[1] == 'O' ||
                                          s[1] == 'b' || s[1] == 'B')) {
        k = ConstantKind::Int;
      } else if (s.back() == 'j' || s.back() == 'J') {
        k = ConstantKind::Complex;
      } else if (s.find_first_of(".eE") != std::string_view::npos) {
        k = ConstantKind::Float;
      }
      c->value.kind = k;
      c->value.number = s;
      set_start(c, t);
      set_end(c, t);
      return c;
    }
    case TokenKind::String:
    case TokenKind::FStringStart:
      return parse_strings();
    case TokenKind::Keyword: {
      ConstantKind k;
      switch (t.kw) {
        case Kw::None_: k = ConstantKind::None; break;
        case Kw::True_: k = ConstantKind::True; break;
        case Kw::False_: k = ConstantKind::False; break;
        default: invalid_syntax();
      }
      advance();
      auto* c = make_node<Constant>();
      c->value.kind = k;
      set_start(c, t);
      set_end(c, t);
      return c;
    }
    case TokenKind::Op:
      switch (t.op) {
        case Op::LPar: return parse_paren_atom();
        case Op::LSqb: return parse_list_atom();
        case Op::LBrace: return parse_brace_atom();
        case Op::Ellipsis: {
          advance();
          auto* c = make_node<Constant>();
          c->value.kind = ConstantKind::Ellipsis;
          set_start(c, t);
          set_end(c, t);
          return c;
        }
        case Op::RPar:
        case Op::RSqb:
        case Op::RBrace:
          invalid_syntax();
        default:
          invalid_syntax();
      }
    default:
      invalid_syntax();
  }
}

// tuple | group | genexp
expr* Parser::parse_paren_atom() {
  const PTok& open = advance();
  if (at_op(Op::RPar)) {
    advance();
    auto* t = make_node<Tuple>();
    t->ctx = expr_context::Load;
    return finish(t, open);
  }
  if (at_kw(Kw::Yield)) {
    expr* y = parse_yield_expr();
    expect_op(Op::RPar, ")");
    return y;
  }
  expr* first = parse_star_named_expression();
  if (at_kw(Kw::For) || (at_kw(Kw::Async) && is_kw(peek(), Kw::For))) {
    if (as<Starred>(first)) error_at_node(first, "iterable unpacking cannot be used in comprehension");
    auto* g = make_node<GeneratorExp>();
    g->elt = first;
    g->generators = parse_comprehension_clauses();
    if (!at_op(Op::RPar)) invalid_syntax();
    advance();
    return finish(g, open);
  }
  if (at_op(Op::Comma)) {
    size_t mark = exprs_.mark();
    exprs_.push(first);
    while (accept_op(Op::Comma)) {
      if (at_op(Op::RPar)) break;
      exprs_.push(parse_star_named_expression());
    }
    if (!at_op(Op::RPar)) {
      if (at_kind(TokenKind::Newline) || at_kind(TokenKind::EndMarker)) error_at(open, "'(' was never closed");
      invalid_syntax();
    }
    advance();
    auto* t = make_node<Tuple>();
    t->elts = exprs_.commit(mark, arena_);
    t->ctx = expr_context::Load;
    return finish(t, open);
  }
  if (!at_op(Op::RPar)) {
    if (at_kind(TokenKind::Newline) || at_kind(TokenKind::EndMarker)) error_at(open, "'(' was never closed");
    invalid_syntax();
  }
  if (as<Starred>(first)) error_at_node(first, "cannot use starred expression here");
  advance();
  return first;
}

// list | listcomp
expr* Parser::parse_list_atom() {
  const PTok& open = advance();
  size_t mark = exprs_.mark();
  if (!at_op(Op::RSqb)) {
    expr* first = parse_star_named_expression();
    if (at_kw(Kw::For) || (at_kw(Kw::Async) && is_kw(peek(), Kw::For))) {
      if (as<Starred>(first)) error_at_node(first, "iterable unpacking cannot be used in comprehension");
      auto* c = make_node<ListComp>();
      c->elt = first;
      c->generators = parse_comprehension_clauses();
      expect_op(Op::RSqb, "]");
      return finish(c, open);
    }
    exprs_.push(first);
    while (accept_op(Op::Comma)) {
      if (at_op(Op::RSqb)) break;
      exprs_.push(parse_star_named_expression());
    }
  }
  if (!at_op(Op::RSqb)) {
    if (at_kind(TokenKind::Newline) || at_kind(TokenKind::EndMarker)) error_at(open, "'[' was never closed");
    invalid_syntax();
  }
  advance();
  auto* l = make_node<List>();
  l->elts = exprs_.commit(mark, arena_);
  l->ctx = expr_context::Load;
  return finish(l, open);
}

// dict | set | dictcomp | setcomp
expr* Parser::parse_brace_atom() {
  const PTok& open = advance();
  auto comp_follows = [&] { return at_kw(Kw::For) || (at_kw(Kw::Async) && is_kw(peek(), Kw::For)); };
  if (at_op(Op::RBrace)) {
    advance();
    auto* d = make_node<Dict>();
    return finish(d, open);
  }
  size_t key_mark = exprs_.mark();
  bool is_dict;
  expr* first_key = nullptr;
  expr* first_value = nullptr;
  if (at_op(Op::DoubleStar)) {
    advance();
    first_value = parse_bitwise_or();
    is_dict = true;
  } else {
    expr* first = parse_star_named_expression();
    if (at_op(Op::Colon) && !as<Starred>(first)) {
      advance();
      first_key = first;
      first_value = parse_expression();
      is_dict = true;
      if (comp_follows()) {
        auto* c = make_node<DictComp>();
        c->key = first_key;
        c->value = first_value;
        c->generators = parse_comprehension_clauses();
        expect_op(Op::RBrace, "}");
        return finish(c, open);
      }
    } else {
      is_dict = false;
      if (comp_follows()) {
        if (as<Starred>(first)) error_at_node(first, "iterable unpacking cannot be used in comprehension");
        auto* c = make_node<SetComp>();
        c->elt = first;
        c->generators = parse_comprehension_clauses();
        expect_op(Op::RBrace, "}");
        return finish(c, open);
      }
      first_key = first;
    }
  }
  if (is_dict) {
    // Keys and values are collected interleaved, then split.
    exprs_.push(first_key);
    exprs_.push(first_value);
    while (accept_op(Op::Comma)) {
      if (at_op(Op::RBrace)) break;
      if (accept_op(Op::DoubleStar)) {
        exprs_.push(nullptr);
        exprs_.push(parse_bitwise_or());
      } else {
        exprs_.push(parse_expression());
        expect_op(Op::Colon, ":");
        exprs_.push(parse_expression());
      }
    }
    if (!at_op(Op::RBrace)) {
      if (at_kind(TokenKind::Newline) || at_kind(TokenKind::EndMarker)) error_at(open, "'{' was never closed");
      invalid_syntax();
    }
    advance();
    auto* d = make_node<Dict>();
    size_t n = (exprs_.size() - key_mark) / 2;
    expr** keys = static_cast<expr**>(arena_.allocate(sizeof(expr*) * n, alignof(expr*)));
    expr** values = static_cast<expr**>(arena_.allocate(sizeof(expr*) * n, alignof(expr*)));
    for (size_t i = 0; i < n; ++i) {
      keys[i] = exprs_.at(key_mark + 2 * i);
      values[i] = exprs_.at(key_mark + 2 * i + 1);
    }
    exprs_.truncate(key_mark);
    d->keys = {keys, static_cast<uint32_t>(n)};
    d->values = {values, static_cast<uint32_t>(n)};
    return finish(d, open);
  }
  exprs_.push(first_key);
  while (accept_op(Op::Comma)) {
    if (at_op(Op::RBrace)) break;
    exprs_.push(parse_star_named_expression());
  }
  if (!at_op(Op::RBrace)) {
    if (at_kind(TokenKind::Newline) || at_kind(TokenKind::EndMarker)) error_at(open, "'{' was never closed");
    invalid_syntax();
  }
  advance();
  auto* s = make_node<Set>();
  s->elts = exprs_.commit(key_mark, arena_);
  return finish(s, open);
}

Span<comprehension*> Parser::parse_comprehension_clauses() {
  size_t mark = nodes_.mark();
  for (;;) {
    int is_async = 0;
    if (at_kw(Kw::Async) && is_kw(peek(), Kw::For)) {
      advance();
      is_async = 1;
    } else if (!at_kw(Kw::For)) {
      break;
    }
    advance();  // for
    auto* c = make_node<comprehension>();
    c->is_async = is_async;
    c->target = parse_star_targets();
    expect_kw(Kw::In, "in");
    c->iter = parse_disjunction();
    size_t if_mark = exprs_.mark();
    while (accept_kw(Kw::If)) exprs_.push(parse_disjunction());
    c->ifs = exprs_.commit(if_mark, arena_);
    nodes_.push(c);
  }
  return commit_nodes<comprehension>(mark);
}

// star_targets: star_target (',' star_target)* [','], converted to Store.
expr* Parser::parse_star_targets() {
  const PTok& start = tok();
  expr* first = parse_star_target();
  expr* result = first;
  if (at_op(Op::Comma)) {
    size_t mark = exprs_.mark();
    exprs_.push(first);
    while (accept_op(Op::Comma)) {
      if (!(at_kind(TokenKind::Name) || at_op(Op::LPar) || at_op(Op::LSqb) || at_op(Op::Star))) break;
      exprs_.push(parse_star_target());
    }
    result = make_tuple_from(mark, start);
  }
  set_store(result, false);
  return result;
}

expr* Parser::parse_star_target() {
  if (at_op(Op::Star)) {
    NestingScope nesting(*this);
    nesting.enter(tok());
    const PTok& star = advance();
    if (at_op(Op::Star)) invalid_syntax();
    auto* s = make_node<Starred>();
    s->value = parse_star_target();
    s->ctx = expr_context::Load;
    return finish(s, star);
  }
  return parse_primary();
}

expr* Parser::parse_lambda() {
  const PTok& start = advance();
  auto* l = make_node<Lambda>();
  l->args = parse_parameters(Op::Colon, false);
  expect_op(Op::Colon, ":");
  l->body = parse_expression();
  return finish(l, start);
}

expr* Parser::parse_yield_expr() {
  const PTok& start = advance();
  if (accept_kw(Kw::From)) {
    auto* y = make_node<YieldFrom>();
    y->value = parse_expression();
    return finish(y, start);
  }
  auto* y = make_node<Yield>();
  if (starts_expression(tok())) y->value = parse_star_expressions();
  return finish(y, start);
}

}  // namespace npufuse::frontend::detail
