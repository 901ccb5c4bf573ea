// String atoms: implicit concatenation and f-strings, built the way CPython
// 3.11 builds them. Its quirks are reproduced on purpose because ast.dump
// shows them:
//  - adjacent literal text is merged into one Constant, and a mix of plain
//    strings and f-strings becomes a single JoinedStr;
//  - every Constant part and FormattedValue of a JoinedStr carries the
//    position of the whole concatenated string expression;
//  - a format spec's JoinedStr spans only the f-string it appears in, and so
//    does the literal text that ends a format spec;
//  - empty literal text is dropped; `f''` is JoinedStr(values=[]);
//  - `{expr=}` adds the source text "expr=" to the literal before the field
//    and defaults the conversion to 'r' when there is no spec or conversion.
#include <cstring>

#include "frontend/literal.h"
#include "frontend/parser_impl.h"

namespace npufuse::frontend::detail {

namespace {

size_t prefix_length(std::string_view literal) {
  size_t i = 0;
  while (i < literal.size() && literal[i] != '\'' && literal[i] != '"') ++i;
  return i;
}

bool has_prefix_char(std::string_view prefix, char lower) {
  for (char c : prefix)
    if (c == lower || c == lower - 32) return true;
  return false;
}

// The body of a string token without prefix and quotes.
std::string_view literal_body(std::string_view literal) {
  size_t p = prefix_length(literal);
  std::string_view rest = literal.substr(p);
  size_t q = (rest.size() >= 6 && rest[0] == rest[1] && rest[1] == rest[2]) ? 3 : 1;
  return rest.substr(q, rest.size() - 2 * q);
}

// True when escape decoding leaves nothing: only backslash-newlines.
bool decodes_to_empty(std::string_view text, bool raw) {
  if (raw) return text.empty();
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] != '\\' || i + 1 >= text.size()) return false;
    if (text[i + 1] == '\n') {
      i += 2;
    } else if (text[i + 1] == '\r') {
      i += (i + 2 < text.size() && text[i + 2] == '\n') ? 3 : 2;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

// What CPython's FstringParser accumulates while walking one string atom.
struct StringBuilder {
  Parser& p;
  const PTok& first;  // first token of the whole concatenation
  const PTok* last;   // last token of the whole concatenation
  bool kind_u = false;
  size_t piece_mark;  // pending literal text (CPython's last_str)
  size_t expr_mark;   // finished parts (CPython's expr_list)
  bool fmode = false;

  StringBuilder(Parser& parser, const PTok& f, const PTok* l)
      : p(parser), first(f), last(l), piece_mark(parser.pieces_.mark()), expr_mark(parser.exprs_.mark()) {
    kind_u = !p.text(first).empty() && p.text(first)[0] == 'u';
  }

  void add_piece(std::string_view text, StrPiece::Form form) {
    if (decodes_to_empty(text, form != StrPiece::Form::FStringText)) return;
    p.pieces_.push(StrPiece{text, form});
  }

  Constant* make_str(const PTok& a, const PTok& b) {
    auto* c = p.make_node<Constant>();
    c->value.kind = ConstantKind::Str;
    c->value.pieces = p.pieces_.commit(piece_mark, p.arena_);
    if (kind_u) c->kind = "u";
    Parser::set_start(c, a);
    Parser::set_end(c, b);
    return c;
  }

  void flush_pending(const PTok& a, const PTok& b) {
    if (p.pieces_.mark() != piece_mark) p.exprs_.push(make_str(a, b));
  }

  expr* finish(const PTok& a, const PTok& b) {
    if (!fmode) return make_str(a, b);
    flush_pending(a, b);
    auto* j = p.make_node<JoinedStr>();
    j->values = p.exprs_.commit(expr_mark, p.arena_);
    Parser::set_start(j, a);
    Parser::set_end(j, b);
    return j;
  }
};

namespace {

// Index of the FStringEnd that closes the FStringStart at `start`.
size_t matching_fstring_end(const std::vector<PTok>& toks, size_t start) {
  int depth = 0;
  for (size_t i = start; i < toks.size(); ++i) {
    if (toks[i].kind == TokenKind::FStringStart) ++depth;
    if (toks[i].kind == TokenKind::FStringEnd && --depth == 0) return i;
  }
  return toks.size() - 1;
}

}  // namespace

// Walks one f-string (FStringStart .. FStringEnd) or one format spec (after
// ':' up to the field's '}'), adding literal text and fields to `b`.
static void parse_fstring_parts(Parser& p, StringBuilder& b, const PTok& t_first, const PTok& t_last, bool raw,
                                bool in_spec);

static expr* parse_replacement_field(Parser& p, StringBuilder& outer, const PTok& t_first, const PTok& t_last,
                                     bool raw, bool in_spec) {
  const PTok& open = p.advance();  // {
  auto* fv = p.make_node<FormattedValue>();
  fv->conversion = -1;
  if (p.at_op(Op::RBrace) || p.at_op(Op::Exclamation) || p.at_op(Op::Colon) || p.at_op(Op::Equal)) {
    const PTok& t = p.tok();
    if (t.kind == TokenKind::Op && t.op != Op::RBrace)
      p.error_at(t, std::string("f-string: valid expression required before '") + std::string(p.text(t)) + "'");
    p.error_at(t, "f-string: valid expression required before '}'");
  }
  if (p.at_kw(Kw::Yield)) {
    fv->value = p.parse_yield_expr();
  } else {
    // 3.11 parses the field's text wrapped in parentheses: a bare tuple or
    // generator is accepted and spans from the '{' to one past its last
    // character, where the added ')' sits.
    const PTok& first_value_tok = p.tok();
    expr* value = p.parse_star_expressions();
    if (as<Starred>(value)) p.error_at_node(value, "f-string: cannot use starred expression here");
    bool wrapped = value == p.last_bare_tuple_;
    if (p.at_kw(Kw::For) || (p.at_kw(Kw::Async) && p.is_kw(p.peek(), Kw::For))) {
      auto* g = p.make_node<GeneratorExp>();
      g->elt = value;
      g->generators = p.parse_comprehension_clauses();
      value = g;
      wrapped = true;
    }
    if (wrapped) {
      const PTok& closer = p.tok();
      Parser::set_start(value, open);
      // When the field's text starts with a line break, 3.11 places the
      // added '(' at the f-string token's column (first line) or column 0.
      if (first_value_tok.line != open.line) value->col_offset = open.line == t_first.line ? t_first.col : 0;
      value->end = closer.begin + 1;
      value->end_lineno = closer.line;
      value->end_col_offset = closer.col + 1;
    }
    fv->value = value;
  }
  bool debug = false;
  if (p.at_op(Op::Equal)) {
    p.advance();
    debug = true;
    outer.add_piece(p.src_text_.substr(open.end, p.tok().begin - open.end), StrPiece::Form::Verbatim);
  }
  if (p.at_op(Op::Exclamation)) {
    p.advance();
    std::string_view conv = p.tok().kind == TokenKind::Name ? p.text(p.tok()) : std::string_view();
    if (conv != "s" && conv != "r" && conv != "a")
      p.error_at(p.tok(), "f-string: invalid conversion character: expected 's', 'r', or 'a'");
    fv->conversion = conv[0];
    p.advance();
  }
  if (p.at_op(Op::Colon)) {
    if (in_spec) p.error_at(p.tok(), "f-string: expressions nested too deeply");
    p.advance();
    StringBuilder spec(p, outer.first, outer.last);
    spec.kind_u = outer.kind_u;
    spec.fmode = true;
    parse_fstring_parts(p, spec, t_first, t_last, raw, true);
    fv->format_spec = spec.finish(t_first, t_last);
  }
  if (!p.at_op(Op::RBrace)) {
    if (p.at_kind(TokenKind::FStringEnd)) p.error_at(p.tok(), "f-string: expecting '}'");
    p.invalid_syntax();
  }
  p.advance();
  if (debug && fv->conversion == -1 && !fv->format_spec) fv->conversion = 'r';
  Parser::set_start(fv, outer.first);
  Parser::set_end(fv, *outer.last);
  return fv;
}

static void parse_fstring_parts(Parser& p, StringBuilder& b, const PTok& t_first, const PTok& t_last, bool raw,
                                bool in_spec) {
  const StrPiece::Form text_form = raw ? StrPiece::Form::FStringRawText : StrPiece::Form::FStringText;
  for (;;) {
    const PTok& t = p.tok();
    if (t.kind == TokenKind::FStringMiddle) {
      if (!raw && std::memchr(p.src_text_.data() + t.begin, '\\', t.end - t.begin)) {
        // Values are decoded lazily, but a bad escape is a syntax error now.
        try {
          (void)decode_fstring_text(p.text(t), false);
        } catch (const LiteralError& e) {
          p.error_at_offset(t.begin + static_cast<uint32_t>(e.offset()), e.what());
        }
      }
      b.add_piece(p.text(t), text_form);
      p.advance();
    } else if (t.kind == TokenKind::Op && t.op == Op::LBrace) {
      // The literal so far must be captured before the field's own debug
      // text joins it, so fields are parsed into a temporary first.
      expr* field = parse_replacement_field(p, b, t_first, t_last, raw, in_spec);
      b.flush_pending(b.first, *b.last);
      p.exprs_.push(field);
    } else if (in_spec && t.kind == TokenKind::Op && t.op == Op::RBrace) {
      return;
    } else if (!in_spec && t.kind == TokenKind::FStringEnd) {
      p.advance();
      return;
    } else {
      p.invalid_syntax();
    }
  }
}

// Values are decoded lazily, but CPython rejects a bad escape (or a
// non-ASCII byte in a bytes literal) while parsing, so literals that could
// hold one are decoded once here. Most literals have neither and cost a scan.
void Parser::validate_string_token(const PTok& t, bool is_bytes) {
  const char* data = src_text_.data() + t.begin;
  size_t size = t.end - t.begin;
  bool suspicious = std::memchr(data, '\\', size) != nullptr;
  if (is_bytes && !suspicious) {
    for (size_t i = 0; i < size; ++i)
      if (static_cast<unsigned char>(data[i]) >= 0x80) {
        suspicious = true;
        break;
      }
  }
  if (!suspicious) return;
  Token token;
  token.begin = t.begin;
  token.end = t.end;
  token.kind = TokenKind::String;
  if (is_bytes) {
    (void)decode_bytes_token(source_, token);
  } else {
    (void)decode_str_token(source_, token);
  }
}

expr* Parser::parse_strings() {
  // Find the extent of the concatenation first: the Constant parts need it.
  size_t i = pos_;
  size_t last_index = pos_;
  while (i < toks_.size()) {
    if (toks_[i].kind == TokenKind::String) {
      last_index = i++;
    } else if (toks_[i].kind == TokenKind::FStringStart) {
      last_index = matching_fstring_end(toks_, i);
      i = last_index + 1;
    } else {
      break;
    }
  }
  const PTok& first = tok();
  const PTok& last = toks_[last_index];
  StringBuilder b(*this, first, &last);
  int bytes_mode = -1;
  while (pos_ <= last_index) {
    const PTok& t = advance();
    std::string_view s = text(t);
    std::string_view prefix = s.substr(0, prefix_length(s));
    bool is_bytes = has_prefix_char(prefix, 'b');
    if (bytes_mode >= 0 && bytes_mode != static_cast<int>(is_bytes))
      error_at(first, "cannot mix bytes and nonbytes literals");
    bytes_mode = is_bytes;
    if (t.kind == TokenKind::String) {
      validate_string_token(t, is_bytes);
      if (is_bytes || !decodes_to_empty(literal_body(s), has_prefix_char(prefix, 'r')))
        pieces_.push(StrPiece{s, StrPiece::Form::Literal});
      continue;
    }
    // f-string: t is its FStringStart
    b.fmode = true;
    size_t end_index = matching_fstring_end(toks_, pos_ - 1);
    parse_fstring_parts(*this, b, t, toks_[end_index], has_prefix_char(prefix, 'r'), false);
  }
  if (bytes_mode == 1) {
    auto* c = make_node<Constant>();
    c->value.kind = ConstantKind::Bytes;
    c->value.pieces = pieces_.commit(b.piece_mark, arena_);
    set_start(c, first);
    set_end(c, last);
    return c;
  }
  return b.finish(first, last);
}

}  // namespace npufuse::frontend::detail
