// Statements: simple statements, blocks and compound statements.
#include "frontend/parser_impl.h"

namespace npufuse::frontend::detail {


void Parser::parse_statement(size_t mark) {
  const PTok& t = tok();
  if (t.kind == TokenKind::Indent) error_at(t, "unexpected indent");
  if (t.kind == TokenKind::Keyword) {
    switch (t.kw) {
      case Kw::If: stmts_.push(parse_if()); return;
      case Kw::While: stmts_.push(parse_while()); return;
      case Kw::For: stmts_.push(parse_for(nullptr)); return;
      case Kw::Try: stmts_.push(parse_try()); return;
      case Kw::With: stmts_.push(parse_with(nullptr)); return;
      case Kw::Def: stmts_.push(parse_function_def(&t, {}, nullptr)); return;
      case Kw::Class: stmts_.push(parse_class_def(&t, {})); return;
      case Kw::Async: {
        const PTok& a = advance();
        if (at_kw(Kw::Def)) return stmts_.push(parse_function_def(&a, {}, &a));
        if (at_kw(Kw::For)) return stmts_.push(parse_for(&a));
        if (at_kw(Kw::With)) return stmts_.push(parse_with(&a));
        invalid_syntax();
      }
      default: break;
    }
  } else if (t.kind == TokenKind::Op && t.op == Op::At) {
    stmts_.push(parse_decorated());
    return;
  } else if (t.kind == TokenKind::Name && text(t) == "match") {
    if (stmt* m = try_parse_match()) {
      stmts_.push(m);
      return;
    }
  }
  parse_simple_statements(mark);
}

// simple_stmts: simple_stmt (';' simple_stmt)* [';'] NEWLINE
void Parser::parse_simple_statements(size_t mark) {
  for (;;) {
    stmts_.push(parse_simple_statement());
    if (accept_op(Op::Semi)) {
      if (at_kind(TokenKind::Newline)) break;
      continue;
    }
    break;
  }
  if (!at_kind(TokenKind::Newline)) {
    if (at_kind(TokenKind::EndMarker)) return;
    invalid_syntax();
  }
  advance();
}

stmt* Parser::parse_simple_statement() {
  const PTok& t = tok();
  if (t.kind == TokenKind::Keyword) {
    switch (t.kw) {
      case Kw::Pass: advance(); return finish(make_node<Pass>(), t);
      case Kw::Break: advance(); return finish(make_node<Break>(), t);
      case Kw::Continue: advance(); return finish(make_node<Continue>(), t);
      case Kw::Return: return parse_return();
      case Kw::Raise: return parse_raise();
      case Kw::Global: return parse_global_nonlocal(true);
      case Kw::Nonlocal: return parse_global_nonlocal(false);
      case Kw::Del: return parse_del();
      case Kw::Assert: return parse_assert();
      case Kw::Import: return parse_import();
      case Kw::From: return parse_from_import();
      default: break;
    }
  } else if (t.kind == TokenKind::Name && text(t) == "type" && peek().kind == TokenKind::Name &&
             (is_op(peek(2), Op::Equal) || is_op(peek(2), Op::LSqb))) {
    return try_parse_type_alias();
  }
  return parse_expression_statement();
}

namespace {
bool is_augassign(Op op, operator_& out) {
  switch (op) {
    case Op::PlusEqual: out = operator_::Add; return true;
    case Op::MinEqual: out = operator_::Sub; return true;
    case Op::StarEqual: out = operator_::Mult; return true;
    case Op::AtEqual: out = operator_::MatMult; return true;
    case Op::SlashEqual: out = operator_::Div; return true;
    case Op::PercentEqual: out = operator_::Mod; return true;
    case Op::AmperEqual: out = operator_::BitAnd; return true;
    case Op::VBarEqual: out = operator_::BitOr; return true;
    case Op::CircumflexEqual: out = operator_::BitXor; return true;
    case Op::LeftShiftEqual: out = operator_::LShift; return true;
    case Op::RightShiftEqual: out = operator_::RShift; return true;
    case Op::DoubleStarEqual: out = operator_::Pow; return true;
    case Op::DoubleSlashEqual: out = operator_::FloorDiv; return true;
    default: return false;
  }
}
}  // namespace

// assignment | star_expressions (an expression statement)
stmt* Parser::parse_expression_statement() {
  const PTok& start = tok();
  auto parse_rhs = [&]() -> expr* { return at_kw(Kw::Yield) ? parse_yield_expr() : parse_star_expressions(); };
  expr* first = parse_rhs();
  const PTok& t = tok();
  if (t.kind == TokenKind::Op) {
    operator_ aug;
    if (t.op == Op::Equal) {
      size_t mark = exprs_.mark();
      exprs_.push(first);
      expr* value = nullptr;
      while (accept_op(Op::Equal)) {
        value = parse_rhs();
        exprs_.push(value);
      }
      exprs_.truncate(exprs_.size() - 1);  // the last one is the value
      for (size_t i = mark; i < exprs_.size(); ++i) {
        if (as<Yield>(exprs_.at(i)) || as<YieldFrom>(exprs_.at(i)))
          error_at_node(exprs_.at(i), "assignment to yield expression not possible");
        set_store(exprs_.at(i), false);
      }
      auto* a = make_node<Assign>();
      a->targets = exprs_.commit(mark, arena_);
      a->value = value;
      return finish(a, start);
    }
    if (t.op == Op::Colon) {
      // annotated assignment
      bool parenthesized = first->begin != start.begin;
      if (as<Tuple>(first)) error_at_node(first, "only single target (not tuple) can be annotated");
      if (as<List>(first)) error_at_node(first, "only single target (not list) can be annotated");
      if (!as<Name>(first) && !as<Attribute>(first) && !as<Subscript>(first))
        error_at_node(first, "illegal target for annotation");
      advance();
      auto* a = make_node<AnnAssign>();
      set_store(first, false);
      a->target = first;
      a->annotation = parse_expression();
      if (accept_op(Op::Equal)) a->value = parse_rhs();
      a->simple = (as<Name>(first) && !parenthesized) ? 1 : 0;
      return finish(a, start);
    }
    if (is_augassign(t.op, aug)) {
      check_aug_target(first);
      advance();
      auto* a = make_node<AugAssign>();
      set_store(first, false);
      a->target = first;
      a->op = aug;
      a->value = parse_rhs();
      return finish(a, start);
    }
  }
  auto* e = make_node<Expr>();
  e->value = first;
  return finish(e, start);
}

// CPython's wording: "expected an indented block after 'if' statement on
// line 3". The header is the logical line that ends at the current NEWLINE.
std::string Parser::missing_block_message() const {
  size_t i = pos_ - 1;  // the NEWLINE after the ':'
  while (i > 0) {
    TokenKind k = toks_[i - 1].kind;
    if (k == TokenKind::Newline || k == TokenKind::Indent || k == TokenKind::Dedent) break;
    --i;
  }
  const PTok* opener = &toks_[i];
  if (is_kw(*opener, Kw::Async) && i + 1 < pos_) opener = &toks_[i + 1];
  std::string what;
  if (is_kw(*opener, Kw::Def)) {
    what = "function definition";
  } else if (is_kw(*opener, Kw::Class)) {
    what = "class definition";
  } else if (opener->kind == TokenKind::Keyword || opener->kind == TokenKind::Name) {
    what = "'" + std::string(text(*opener)) + "' statement";
  } else {
    return "expected an indented block";
  }
  return "expected an indented block after " + what + " on line " + std::to_string(opener->line);
}

Span<stmt*> Parser::parse_block() {
  size_t mark = stmts_.mark();
  if (at_kind(TokenKind::Newline)) {
    advance();
    if (!at_kind(TokenKind::Indent)) error_at(tok(), missing_block_message());
    advance();
    while (!at_kind(TokenKind::Dedent) && !at_kind(TokenKind::EndMarker)) parse_statement(mark);
    if (at_kind(TokenKind::Dedent)) advance();
  } else {
    parse_simple_statements(mark);
  }
  return stmts_.commit(mark, arena_);
}

stmt* Parser::parse_if() {
  const PTok& start = advance();
  auto* n = make_node<If>();
  n->test = parse_named_expression();
  expect_op(Op::Colon, ":");
  n->body = parse_block();
  set_start(n, start);
  end_at_last_token(n);
  if (at_kw(Kw::Elif)) {
    // Each `elif` nests one If deeper; bound the chain like any nesting so
    // that the parser and every later walk of the tree stay within the stack.
    NestingScope scope(*this);
    scope.enter(tok());
    stmt* inner = parse_if();
    n->orelse = arena_.copy(&inner, 1);
    set_end(n, inner);
  } else if (at_kw(Kw::Else)) {
    advance();
    expect_op(Op::Colon, ":");
    n->orelse = parse_block();
    end_at_last_token(n);
  }
  return n;
}

stmt* Parser::parse_while() {
  const PTok& start = advance();
  auto* n = make_node<While>();
  n->test = parse_named_expression();
  expect_op(Op::Colon, ":");
  n->body = parse_block();
  set_start(n, start);
  end_at_last_token(n);
  if (accept_kw(Kw::Else)) {
    expect_op(Op::Colon, ":");
    n->orelse = parse_block();
    end_at_last_token(n);
  }
  return n;
}

stmt* Parser::parse_for(const PTok* async_tok) {
  const PTok& for_tok = advance();
  const PTok& start = async_tok ? *async_tok : for_tok;
  expr* target = parse_star_targets();
  expect_kw(Kw::In, "in");
  expr* iter = parse_star_expressions();
  expect_op(Op::Colon, ":");
  Span<stmt*> body = parse_block();
  Span<stmt*> orelse;
  if (accept_kw(Kw::Else)) {
    expect_op(Op::Colon, ":");
    orelse = parse_block();
  }
  stmt* result;
  if (async_tok) {
    auto* n = make_node<AsyncFor>();
    n->target = target, n->iter = iter, n->body = body, n->orelse = orelse;
    result = n;
  } else {
    auto* n = make_node<For>();
    n->target = target, n->iter = iter, n->body = body, n->orelse = orelse;
    result = n;
  }
  set_start(result, start);
  end_at_last_token(result);
  return result;
}

withitem* Parser::parse_with_item() {
  auto* w = make_node<withitem>();
  w->context_expr = parse_expression();
  if (accept_kw(Kw::As)) {
    w->optional_vars = parse_star_target();
    set_store(w->optional_vars, false);
    if (!(at_op(Op::Comma) || at_op(Op::RPar) || at_op(Op::Colon))) invalid_syntax();
  }
  return w;
}

stmt* Parser::parse_with(const PTok* async_tok) {
  const PTok& with_tok = advance();
  const PTok& start = async_tok ? *async_tok : with_tok;
  size_t mark = nodes_.mark();
  bool done = false;
  if (at_op(Op::LPar)) {
    // 'with' '(' ','.with_item+ ','? ')' ':' -- else the '(' opens an expression.
    done = attempt([&]() -> Node* {
             advance();
             for (;;) {
               nodes_.push(parse_with_item());
               if (!accept_op(Op::Comma)) break;
               if (at_op(Op::RPar)) break;
             }
             if (!at_op(Op::RPar) || !is_op(peek(), Op::Colon)) invalid_syntax();
             advance();
             return nodes_.at(mark);
           }) != nullptr;
  }
  if (!done) {
    for (;;) {
      nodes_.push(parse_with_item());
      if (!accept_op(Op::Comma)) break;
    }
  }
  expect_op(Op::Colon, ":");
  Span<withitem*> items = commit_nodes<withitem>(mark);
  Span<stmt*> body = parse_block();
  stmt* result;
  if (async_tok) {
    auto* n = make_node<AsyncWith>();
    n->items = items, n->body = body;
    result = n;
  } else {
    auto* n = make_node<With>();
    n->items = items, n->body = body;
    result = n;
  }
  set_start(result, start);
  end_at_last_token(result);
  return result;
}

stmt* Parser::parse_try() {
  const PTok& start = advance();
  expect_op(Op::Colon, ":");
  Span<stmt*> body = parse_block();
  size_t mark = nodes_.mark();
  int star_kind = -1;  // -1 unknown, 0 except, 1 except*
  Span<stmt*> last = body;
  while (at_kw(Kw::Except)) {
    const PTok& ex = advance();
    auto* h = make_node<ExceptHandler>();
    int this_star = accept_op(Op::Star) ? 1 : 0;
    if (star_kind >= 0 && this_star != star_kind)
      error_at(ex, "cannot have both 'except' and 'except*' on the same 'try'");
    star_kind = this_star;
    if (!at_op(Op::Colon)) {
      h->type = parse_expression();
      if (at_op(Op::Comma)) error_at_node(h->type, "multiple exception types must be parenthesized");
      if (accept_kw(Kw::As)) h->name = expect_name();
    } else if (this_star) {
      error_at(tok(), "expected one or more exception types");
    }
    expect_op(Op::Colon, ":");
    h->body = parse_block();
    set_start(h, ex);
    end_at_last_token(h);
    last = h->body;
    nodes_.push(h);
  }
  bool has_handlers = nodes_.mark() != mark;
  Span<stmt*> orelse, finalbody;
  if (has_handlers && accept_kw(Kw::Else)) {
    expect_op(Op::Colon, ":");
    orelse = parse_block();
    last = orelse;
  }
  if (accept_kw(Kw::Finally)) {
    expect_op(Op::Colon, ":");
    finalbody = parse_block();
    last = finalbody;
  } else if (!has_handlers) {
    error_at(tok(), "expected 'except' or 'finally' block");
  }
  Span<excepthandler*> handlers = commit_nodes<excepthandler>(mark);
  stmt* result;
  if (star_kind == 1) {
    auto* n = make_node<TryStar>();
    n->body = body, n->handlers = handlers, n->orelse = orelse, n->finalbody = finalbody;
    result = n;
  } else {
    auto* n = make_node<Try>();
    n->body = body, n->handlers = handlers, n->orelse = orelse, n->finalbody = finalbody;
    result = n;
  }
  set_start(result, start);
  end_at_last_token(result);
  return result;
}

stmt* Parser::parse_decorated() {
  size_t mark = exprs_.mark();
  while (at_op(Op::At)) {
    advance();
    exprs_.push(parse_named_expression());
    if (!at_kind(TokenKind::Newline)) invalid_syntax();
    advance();
  }
  Span<expr*> decorators = exprs_.commit(mark, arena_);
  const PTok& t = tok();
  if (at_kw(Kw::Def)) return parse_function_def(&t, decorators, nullptr);
  if (at_kw(Kw::Class)) return parse_class_def(&t, decorators);
  if (at_kw(Kw::Async) && is_kw(peek(), Kw::Def)) {
    advance();
    return parse_function_def(&t, decorators, &t);
  }
  invalid_syntax();
}

stmt* Parser::parse_function_def(const PTok* start, Span<expr*> decorators, const PTok* async_tok) {
  advance();  // def
  std::string_view name = expect_name();
  Span<type_param*> type_params;
  if (at_op(Op::LSqb)) type_params = parse_type_params();
  const PTok& open = tok();
  if (!accept_op(Op::LPar)) error_at(tok(), "expected '('");
  arguments* args = parse_parameters(Op::RPar, true);
  if (!at_op(Op::RPar)) {
    if (at_kind(TokenKind::Newline) || at_kind(TokenKind::EndMarker)) error_at(open, "'(' was never closed");
    invalid_syntax();
  }
  advance();
  expr* returns = nullptr;
  if (accept_op(Op::RArrow)) returns = parse_expression();
  expect_op(Op::Colon, ":");
  Span<stmt*> body = parse_block();
  stmt* result;
  if (async_tok) {
    auto* n = make_node<AsyncFunctionDef>();
    n->name = name, n->args = args, n->body = body, n->decorator_list = decorators, n->returns = returns;
    n->type_params = type_params;
    result = n;
  } else {
    auto* n = make_node<FunctionDef>();
    n->name = name, n->args = args, n->body = body, n->decorator_list = decorators, n->returns = returns;
    n->type_params = type_params;
    result = n;
  }
  set_start(result, *start);
  end_at_last_token(result);
  return result;
}

stmt* Parser::parse_class_def(const PTok* start, Span<expr*> decorators) {
  advance();  // class
  auto* n = make_node<ClassDef>();
  n->name = expect_name();
  if (at_op(Op::LSqb)) n->type_params = parse_type_params();
  if (at_op(Op::LPar)) {
    const PTok& open = advance();
    parse_call_arguments(&n->bases, &n->keywords, false, open, nullptr);
  }
  expect_op(Op::Colon, ":");
  n->decorator_list = decorators;
  n->body = parse_block();
  set_start(n, *start);
  end_at_last_token(n);
  return n;
}

// parameters / lambda_parameters, up to (not including) `closer`.
arguments* Parser::parse_parameters(Op closer, bool annotations) {
  auto* a = make_node<arguments>();
  size_t pos_mark = nodes_.mark();
  size_t default_mark = exprs_.mark();
  int posonly_count = -1;
  bool seen_star = false, seen_default = false;
  const PTok* bare_star = nullptr;
  arg* vararg = nullptr;
  arg* kwarg = nullptr;
  auto parse_arg = [&](bool star_annotation) {
    const PTok& name_tok = tok();
    auto* p = make_node<arg>();
    p->arg = expect_name();
    if (annotations && accept_op(Op::Colon)) {
      p->annotation = star_annotation && at_op(Op::Star) ? parse_star_expression() : parse_expression();
    }
    return finish(p, name_tok);
  };
  // Keyword-only parameters come after the positional ones; they are few,
  // so plain vectors hold them until the end.
  std::vector<arg*> kwonly;
  std::vector<expr*> kwdefaults;
  while (!at_op(closer)) {
    const PTok& t = tok();
    if (kwarg) error_at(t, "arguments cannot follow var-keyword argument");
    if (at_op(Op::Slash)) {
      if (seen_star) error_at(t, "/ must be ahead of *");
      if (posonly_count >= 0) error_at(t, "/ may appear only once");
      if (nodes_.mark() == pos_mark) error_at(t, "at least one argument must precede /");
      advance();
      posonly_count = static_cast<int>(nodes_.mark() - pos_mark);
    } else if (at_op(Op::Star)) {
      if (seen_star) error_at(t, "* argument may appear only once");
      advance();
      seen_star = true;
      if (at_op(Op::Comma) || at_op(closer)) {
        if (at_op(closer) || (is_op(peek(), closer))) error_at(t, "named arguments must follow bare *");
        bare_star = &t;
      } else {
        vararg = parse_arg(true);
        if (at_op(Op::Equal)) error_at(tok(), "var-positional argument cannot have default value");
      }
    } else if (at_op(Op::DoubleStar)) {
      advance();
      kwarg = parse_arg(false);
      if (at_op(Op::Equal)) error_at(tok(), "var-keyword argument cannot have default value");
    } else {
      arg* p = parse_arg(false);
      expr* def = nullptr;
      if (accept_op(Op::Equal)) def = parse_expression();
      if (seen_star) {
        kwonly.push_back(p);
        kwdefaults.push_back(def);
      } else {
        if (def) {
          seen_default = true;
          exprs_.push(def);
        } else if (seen_default) {
          error_at(t, "non-default argument follows default argument");
        }
        nodes_.push(p);
      }
    }
    if (!accept_op(Op::Comma)) break;
  }
  if (bare_star && kwonly.empty()) error_at(*bare_star, "named arguments must follow bare *");
  a->defaults = exprs_.commit(default_mark, arena_);
  Span<arg*> positional = commit_nodes<arg>(pos_mark);
  if (posonly_count > 0) {
    a->posonlyargs = {positional.data, static_cast<uint32_t>(posonly_count)};
    a->args = {positional.data + posonly_count, positional.size - static_cast<uint32_t>(posonly_count)};
  } else {
    a->args = positional;
  }
  a->vararg = vararg;
  a->kwarg = kwarg;
  a->kwonlyargs = arena_.copy(kwonly.data(), kwonly.size());
  a->kw_defaults = arena_.copy(kwdefaults.data(), kwdefaults.size());
  return a;
}

Span<type_param*> Parser::parse_type_params() {
  const PTok& open = advance();  // [
  size_t mark = nodes_.mark();
  while (!at_op(Op::RSqb)) {
    const PTok& start = tok();
    if (accept_op(Op::Star)) {
      auto* p = make_node<TypeVarTuple>();
      p->name = expect_name();
      if (accept_op(Op::Equal)) p->default_value = parse_star_expression();
      nodes_.push(finish(p, start));
    } else if (accept_op(Op::DoubleStar)) {
      auto* p = make_node<ParamSpec>();
      p->name = expect_name();
      if (accept_op(Op::Equal)) p->default_value = parse_expression();
      nodes_.push(finish(p, start));
    } else {
      auto* p = make_node<TypeVar>();
      p->name = expect_name();
      if (accept_op(Op::Colon)) p->bound = parse_expression();
      if (accept_op(Op::Equal)) p->default_value = parse_expression();
      nodes_.push(finish(p, start));
    }
    if (!accept_op(Op::Comma)) break;
  }
  if (nodes_.mark() == mark) error_at(tok(), "Type parameter list cannot be empty");
  if (!at_op(Op::RSqb)) {
    if (at_kind(TokenKind::Newline)) error_at(open, "'[' was never closed");
    invalid_syntax();
  }
  advance();
  return commit_nodes<type_param>(mark);
}

stmt* Parser::try_parse_type_alias() {
  const PTok& start = advance();  // type
  auto* n = make_node<TypeAlias>();
  const PTok& name_tok = advance();
  auto* name = make_node<Name>();
  name->id = text(name_tok);
  name->ctx = expr_context::Store;
  set_start(name, name_tok);
  set_end(name, name_tok);
  n->name = name;
  if (at_op(Op::LSqb)) n->type_params = parse_type_params();
  expect_op(Op::Equal, "=");
  n->value = parse_expression();
  return finish(n, start);
}

// dotted_name: NAME ('.' NAME)*, as one identifier.
std::string_view Parser::parse_dotted_name() {
  const PTok& first = tok();
  expect_name();
  bool contiguous = true;
  size_t count = 1;
  while (at_op(Op::Dot) && peek().kind == TokenKind::Name) {
    if (tok().begin != prev().end || peek().begin != tok().end) contiguous = false;
    pos_ += 2;
    ++count;
  }
  if (contiguous) return src_text_.substr(first.begin, prev().end - first.begin);
  // Spaces or line continuations inside the name: assemble it in the arena.
  std::string joined;
  for (size_t i = pos_ - (2 * count - 1); i < pos_; ++i) joined += text(toks_[i]);
  char* buf = static_cast<char*>(arena_.allocate(joined.size(), 1));
  std::memcpy(buf, joined.data(), joined.size());
  return {buf, joined.size()};
}

alias* Parser::parse_dotted_alias(bool dotted) {
  const PTok& start = tok();
  auto* a = make_node<alias>();
  a->name = dotted ? parse_dotted_name() : expect_name();
  if (accept_kw(Kw::As)) a->asname = expect_name();
  return finish(a, start);
}

stmt* Parser::parse_import() {
  const PTok& start = advance();
  size_t mark = nodes_.mark();
  do {
    nodes_.push(parse_dotted_alias(true));
  } while (accept_op(Op::Comma));
  auto* n = make_node<Import>();
  n->names = commit_nodes<alias>(mark);
  return finish(n, start);
}

stmt* Parser::parse_from_import() {
  const PTok& start = advance();
  auto* n = make_node<ImportFrom>();
  int level = 0;
  for (;;) {
    if (accept_op(Op::Dot)) ++level;
    else if (accept_op(Op::Ellipsis)) level += 3;
    else break;
  }
  if (!at_kw(Kw::Import)) {
    n->module = parse_dotted_name();
  } else if (level == 0) {
    invalid_syntax();  // `from import x`
  }
  expect_kw(Kw::Import, "import");
  n->level = level;
  size_t mark = nodes_.mark();
  if (at_op(Op::Star)) {
    const PTok& star = advance();
    auto* a = make_node<alias>();
    a->name = text(star);
    nodes_.push(finish(a, star));
  } else if (at_op(Op::LPar)) {
    advance();
    do {
      if (at_op(Op::RPar) && nodes_.mark() != mark) break;
      nodes_.push(parse_dotted_alias(false));
    } while (accept_op(Op::Comma));
    expect_op(Op::RPar, ")");
  } else {
    do {
      if (at_kind(TokenKind::Newline) && nodes_.mark() != mark)
        error_at(prev(), "trailing comma not allowed without surrounding parentheses");
      nodes_.push(parse_dotted_alias(false));
    } while (accept_op(Op::Comma));
  }
  n->names = commit_nodes<alias>(mark);
  return finish(n, start);
}

stmt* Parser::parse_global_nonlocal(bool global) {
  const PTok& start = advance();
  size_t mark = names_.mark();
  do {
    names_.push(expect_name());
  } while (accept_op(Op::Comma));
  if (global) {
    auto* n = make_node<Global>();
    n->names = names_.commit(mark, arena_);
    return finish(n, start);
  }
  auto* n = make_node<Nonlocal>();
  n->names = names_.commit(mark, arena_);
  return finish(n, start);
}

stmt* Parser::parse_del() {
  const PTok& start = advance();
  size_t mark = exprs_.mark();
  do {
    if (at_kind(TokenKind::Newline) || at_op(Op::Semi)) break;
    expr* e = parse_bitwise_or();
    set_store(e, true);
    exprs_.push(e);
  } while (accept_op(Op::Comma));
  if (exprs_.mark() == mark) invalid_syntax();
  auto* n = make_node<Delete>();
  n->targets = exprs_.commit(mark, arena_);
  return finish(n, start);
}

stmt* Parser::parse_return() {
  const PTok& start = advance();
  auto* n = make_node<Return>();
  if (starts_expression(tok())) n->value = parse_star_expressions();
  return finish(n, start);
}

stmt* Parser::parse_raise() {
  const PTok& start = advance();
  auto* n = make_node<Raise>();
  if (starts_expression(tok())) {
    n->exc = parse_expression();
    if (accept_kw(Kw::From)) n->cause = parse_expression();
  }
  return finish(n, start);
}

stmt* Parser::parse_assert() {
  const PTok& start = advance();
  auto* n = make_node<Assert>();
  n->test = parse_expression();
  if (accept_op(Op::Comma)) n->msg = parse_expression();
  return finish(n, start);
}

// match_stmt: "match" subject_expr ':' NEWLINE INDENT case_block+ DEDENT.
// Only the header is speculative: once `match x:` is followed by an
// indented `case`, errors in the cases are reported as they are.
stmt* Parser::try_parse_match() {
  const PTok& start = tok();
  Match* m = attempt([&]() -> Match* {
    advance();  // match
    auto* header = make_node<Match>();
    const PTok& subject_start = tok();
    expr* first = parse_star_named_expression();
    if (at_op(Op::Comma)) {
      size_t mark = exprs_.mark();
      exprs_.push(first);
      while (accept_op(Op::Comma)) {
        if (at_op(Op::Colon)) break;
        exprs_.push(parse_star_named_expression());
      }
      first = make_tuple_from(mark, subject_start);
    } else if (as<Starred>(first)) {
      invalid_syntax();
    }
    header->subject = first;
    if (!at_op(Op::Colon) || peek().kind != TokenKind::Newline) invalid_syntax();
    if (peek(2).kind != TokenKind::Indent || !is_soft(peek(3), "case")) invalid_syntax();
    pos_ += 3;
    return header;
  });
  if (!m) return nullptr;
  size_t mark = nodes_.mark();
  while (tok().kind == TokenKind::Name && text(tok()) == "case") nodes_.push(parse_case_block());
  if (!at_kind(TokenKind::Dedent) && !at_kind(TokenKind::EndMarker)) invalid_syntax();
  if (at_kind(TokenKind::Dedent)) advance();
  m->cases = commit_nodes<match_case>(mark);
  set_start(m, start);
  end_at_last_token(m);
  return m;
}

}  // namespace npufuse::frontend::detail
