// Token preparation, error reporting and the public entry points.
#include "frontend/parser.h"

#include "frontend/lexer.h"
#include "frontend/parser_impl.h"

namespace npufuse::frontend {
namespace detail {

namespace {
// The thread's reusable buffers, or a private set while they are taken.
ParserBuffers& thread_buffers() {
  thread_local ParserBuffers buffers;
  return buffers;
}
ParserBuffers& acquire_buffers() {
  ParserBuffers& shared = thread_buffers();
  if (!shared.in_use) {
    shared.in_use = true;
    shared.reset();
    return shared;
  }
  auto* own = new ParserBuffers();
  own->in_use = true;
  return *own;
}
}  // namespace

Parser::Parser(const SourceFile& source, const std::vector<Token>& tokens, Arena& arena)
    : source_(source),
      src_text_(source.text()),
      arena_(arena),
      buffers_(acquire_buffers()),
      toks_(buffers_.toks),
      exprs_(buffers_.exprs),
      stmts_(buffers_.stmts),
      keywords_(buffers_.keywords),
      cmpops_(buffers_.cmpops),
      names_(buffers_.names),
      pieces_(buffers_.pieces),
      nodes_(buffers_.nodes) {
  toks_.reserve(tokens.size() + 1);
  // Token offsets only grow, so one forward walk over the line starts gives
  // every token its line and column without a search per token.
  const int lines = source.line_count();
  // A cursor over the line starts: `next` caches where the following line
  // begins, so most tokens cost one comparison.
  struct LineCursor {
    int line = 1;
    uint32_t start = 0;
    uint32_t next = UINT32_MAX;
  };
  auto next_start = [&](int line) { return line < lines ? source.line_start(line + 1) : UINT32_MAX; };
  LineCursor at_begin, at_end;
  at_begin.next = at_end.next = next_start(1);
  auto advance_line = [&](LineCursor& c, uint32_t offset) {
    while (offset >= c.next) {
      ++c.line;
      c.start = c.next;
      c.next = next_start(c.line);
    }
  };
  for (const Token& t : tokens) {
    switch (t.kind) {
      case TokenKind::Comment:
      case TokenKind::Nl:
      case TokenKind::Continuation:
      case TokenKind::TypeComment:
        continue;
      default:
        break;
    }
    PTok& p = toks_.emplace_back();  // filled in place: no copy of a temporary
    p.begin = t.begin;
    p.end = t.end;
    p.kind = t.kind;
    p.op = t.op;
    p.kw = t.kw;
    advance_line(at_begin, t.begin);
    p.line = at_begin.line;
    p.col = static_cast<int32_t>(t.begin - at_begin.start);
    // A token's end belongs to the line it ends on; an end exactly at a line
    // start (after a newline) still belongs to the previous line.
    uint32_t last = t.end > t.begin ? t.end - 1 : t.end;
    if (at_end.line < at_begin.line) at_end = at_begin;
    advance_line(at_end, last);
    p.end_line = at_end.line;
    p.end_col = static_cast<int32_t>(t.end - at_end.start);
  }
  if (toks_.empty() || toks_.back().kind != TokenKind::EndMarker) {
    PTok p;
    p.begin = p.end = static_cast<uint32_t>(src_text_.size());
    LineCol lc = source.line_col(p.begin);
    p.line = p.end_line = lc.line;
    p.col = p.end_col = lc.col;
    toks_.push_back(p);
  }
}

Parser::~Parser() {
  if (&buffers_ == &thread_buffers()) {
    buffers_.in_use = false;
  } else {
    delete &buffers_;
  }
}

void Parser::error_at(const PTok& t, std::string message) const {
  throw SyntaxError(Diagnostic{source_.path(), t.line, t.col + 1, std::move(message)});
}

void Parser::error_at_node(const Node* n, std::string message) const {
  throw SyntaxError(Diagnostic{source_.path(), n->lineno, n->col_offset + 1, std::move(message)});
}

void Parser::error_at_offset(uint32_t offset, std::string message) const {
  LineCol lc = source_.line_col(offset);
  throw SyntaxError(Diagnostic{source_.path(), lc.line, lc.col + 1, std::move(message)});
}

void Parser::invalid_syntax() const {
  const PTok& t = tok();
  switch (t.kind) {
    case TokenKind::Indent:
      error_at(t, "unexpected indent");
    case TokenKind::Dedent:
      error_at(t, "unindent does not match any outer indentation level");
    case TokenKind::EndMarker:
      error_at(t, "unexpected EOF while parsing");
    default:
      error_at(t, "invalid syntax");
  }
}

const PTok& Parser::expect_op(Op o, const char* spelled) {
  if (at_op(o)) return advance();
  if (tok().kind == TokenKind::Indent || tok().kind == TokenKind::EndMarker) invalid_syntax();
  // CPython reports a missing ':' or closing bracket after the previous token.
  if (o == Op::Colon && pos_ > 0) {
    const PTok& p = prev();
    throw SyntaxError(Diagnostic{source_.path(), p.end_line, p.end_col + 1, std::string("expected '") + spelled + "'"});
  }
  error_at(tok(), "invalid syntax");
}

const PTok& Parser::expect_kw(Kw k, const char* spelled) {
  if (at_kw(k)) return advance();
  if (tok().kind == TokenKind::Indent) invalid_syntax();
  error_at(tok(), std::string("expected '") + spelled + "'");
}

std::string_view Parser::expect_name() {
  if (tok().kind != TokenKind::Name) invalid_syntax();
  return text(advance());
}

Module* Parser::parse_module() {
  Module* m = make_node<Module>();
  size_t mark = stmts_.mark();
  while (!at_kind(TokenKind::EndMarker)) {
    if (at_kind(TokenKind::Newline)) {  // an empty logical line (e.g. a lone ';'-free NEWLINE)
      ++pos_;
      continue;
    }
    parse_statement(mark);
  }
  m->body = stmts_.commit(mark, arena_);
  return m;
}

expr* Parser::parse_expression_input() {
  // eval_input: expressions NEWLINE* ENDMARKER. Leading indentation is
  // allowed, as eval() allows it: the text often comes indented from a
  // multi-line string in a data file.
  if (at_kind(TokenKind::Indent)) ++pos_;
  if (at_kind(TokenKind::EndMarker) || at_kind(TokenKind::Newline)) error_at(tok(), "expected an expression");
  expr* e = parse_star_expressions();
  while (at_kind(TokenKind::Newline) || at_kind(TokenKind::Dedent)) ++pos_;
  if (!at_kind(TokenKind::EndMarker)) invalid_syntax();
  return e;
}

}  // namespace detail

std::unique_ptr<ParsedFile> parse_file(std::string path, std::string bytes) {
  auto file = std::make_unique<ParsedFile>(std::move(path), std::move(bytes));
  file->tokens = tokenize(file->source);
  detail::Parser parser(file->source, file->tokens, file->arena);
  file->module = parser.parse_module();
  file->node_count = parser.node_count();
  return file;
}

std::unique_ptr<ParsedExpression> parse_expression(std::string_view text, std::string_view origin) {
  auto parsed = std::make_unique<ParsedExpression>(std::string(origin), std::string(text));
  parsed->tokens = tokenize(parsed->source);
  detail::Parser parser(parsed->source, parsed->tokens, parsed->arena);
  parsed->expr = parser.parse_expression_input();
  return parsed;
}

}  // namespace npufuse::frontend
