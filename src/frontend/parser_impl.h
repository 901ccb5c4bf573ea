#pragma once
// Internals of the recursive-descent parser, shared by parser_*.cc.
// Grammar rule names in comments follow CPython's python.gram.
#include <string>
#include <string_view>
#include <vector>

#include "frontend/arena.h"
#include "frontend/ast.h"
#include "frontend/diagnostic.h"
#include "frontend/source.h"
#include "frontend/token.h"

namespace npufuse::frontend::detail {

using namespace ast;

// A significant token (no comments or non-logical newlines) with CPython's
// line/column attributes for both ends.
struct PTok {
  uint32_t begin = 0, end = 0;
  int32_t line = 0, col = 0, end_line = 0, end_col = 0;
  TokenKind kind = TokenKind::EndMarker;
  Op op = Op::None;
  Kw kw = Kw::None;
};

// Elements of lists under construction. Lists nest like the grammar does,
// so one stack per element type serves every list: remember the size, push,
// then move the tail into the arena.
template <class T>
class Scratch {
 public:
  size_t mark() const { return items_.size(); }
  void push(T v) { items_.push_back(v); }
  size_t size() const { return items_.size(); }
  T& at(size_t i) { return items_[i]; }
  Span<T> commit(size_t mark, Arena& arena) {
    Span<T> s = arena.copy(items_.data() + mark, items_.size() - mark);
    items_.resize(mark);
    return s;
  }
  void truncate(size_t mark) { items_.resize(mark); }

 private:
  std::vector<T> items_;
};

// Working memory of a parse. One set per thread is kept between parses so
// that parsing many files does not allocate it again for each file.
struct ParserBuffers {
  std::vector<PTok> toks;
  Scratch<expr*> exprs;
  Scratch<stmt*> stmts;
  Scratch<keyword*> keywords;
  Scratch<cmpop> cmpops;
  Scratch<std::string_view> names;
  Scratch<StrPiece> pieces;
  Scratch<Node*> nodes;
  bool in_use = false;
  void reset() {
    toks.clear();
    exprs.truncate(0), stmts.truncate(0), keywords.truncate(0), cmpops.truncate(0);
    names.truncate(0), pieces.truncate(0), nodes.truncate(0);
  }
};

class Parser {
 public:
  Parser(const SourceFile& source, const std::vector<Token>& tokens, Arena& arena);
  ~Parser();
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;

  Module* parse_module();
  expr* parse_expression_input();
  size_t node_count() const { return node_count_; }

  // ---- tokens (parser.cc)
  const PTok& tok() const { return toks_[pos_]; }
  const PTok& peek(size_t k = 1) const {
    size_t i = pos_ + k;
    return toks_[i < toks_.size() ? i : toks_.size() - 1];
  }
  const PTok& prev() const { return toks_[pos_ - 1]; }
  bool at_op(Op o) const { return tok().kind == TokenKind::Op && tok().op == o; }
  bool at_kw(Kw k) const { return tok().kind == TokenKind::Keyword && tok().kw == k; }
  bool at_kind(TokenKind k) const { return tok().kind == k; }
  bool is_op(const PTok& t, Op o) const { return t.kind == TokenKind::Op && t.op == o; }
  bool is_kw(const PTok& t, Kw k) const { return t.kind == TokenKind::Keyword && t.kw == k; }
  bool is_soft(const PTok& t, std::string_view word) const {
    return t.kind == TokenKind::Name && text(t) == word;
  }
  std::string_view text(const PTok& t) const { return src_text_.substr(t.begin, t.end - t.begin); }
  const PTok& advance() { return toks_[pos_++]; }
  bool accept_op(Op o) {
    if (!at_op(o)) return false;
    ++pos_;
    return true;
  }
  bool accept_kw(Kw k) {
    if (!at_kw(k)) return false;
    ++pos_;
    return true;
  }
  const PTok& expect_op(Op o, const char* spelled);
  const PTok& expect_kw(Kw k, const char* spelled);
  std::string_view expect_name();
  [[noreturn]] void error_at(const PTok& t, std::string message) const;
  [[noreturn]] void error_at_node(const Node* n, std::string message) const;
  [[noreturn]] void error_at_offset(uint32_t offset, std::string message) const;
  [[noreturn]] void invalid_syntax() const;

  // ---- node construction
  template <class T>
  T* make_node() {
    ++node_count_;
    T* n = arena_.make<T>();
    static_cast<Node*>(n)->kind = T::kKind;
    return n;
  }
  static void set_start(Node* n, const PTok& t) {
    n->begin = t.begin, n->lineno = t.line, n->col_offset = t.col;
  }
  static void set_start(Node* n, const Node* from) {
    n->begin = from->begin, n->lineno = from->lineno, n->col_offset = from->col_offset;
  }
  static void set_end(Node* n, const PTok& t) {
    n->end = t.end, n->end_lineno = t.end_line, n->end_col_offset = t.end_col;
  }
  static void set_end(Node* n, const Node* from) {
    n->end = from->end, n->end_lineno = from->end_lineno, n->end_col_offset = from->end_col_offset;
  }
  // Node spanning from `a` to the previous token (the last one consumed).
  template <class T, class A>
  T* finish(T* n, const A& a) {
    set_start(n, a);
    set_end(n, prev());
    return n;
  }

  // A compound statement ends at the last token of its last block that is
  // not NEWLINE/INDENT/DEDENT, so a trailing ';' counts, as in CPython.
  void end_at_last_token(Node* n) {
    size_t i = pos_;
    while (i > 0) {
      TokenKind k = toks_[i - 1].kind;
      if (k != TokenKind::Newline && k != TokenKind::Indent && k != TokenKind::Dedent) break;
      --i;
    }
    set_end(n, toks_[i - 1]);
  }

  // ---- nesting limit
  // CPython refuses trees nested deeper than about 3000 levels (its parser
  // stack and AST conversion limits). Keeping the same bound keeps every
  // recursive walk of the tree, here and in later stages, within the stack.
  static constexpr int kMaxNesting = 2989;
  int depth_ = 0;
  void enter_nested(const PTok& at) {
    if (++depth_ > kMaxNesting) {
      depth_ = 0;
      error_at(at, "too many nested expressions");
    }
  }
  // Counts levels entered in one function and gives them back on exit.
  class NestingScope {
   public:
    explicit NestingScope(Parser& p) : p_(p) {}
    ~NestingScope() { p_.depth_ -= levels_; }
    void enter(const PTok& at) {
      p_.enter_nested(at);
      ++levels_;
    }
    NestingScope(const NestingScope&) = delete;
    NestingScope& operator=(const NestingScope&) = delete;

   private:
    Parser& p_;
    int levels_ = 0;
  };

  // ---- statements (parser_stmt.cc)
  void parse_statements_until_dedent(size_t mark);
  void parse_statement(size_t mark);
  void parse_simple_statements(size_t mark);
  stmt* parse_simple_statement();
  stmt* parse_expression_statement();
  Span<stmt*> parse_block();
  std::string missing_block_message() const;
  stmt* parse_compound(const PTok* async_tok);
  stmt* parse_if();  // also the `elif` chain, as nested If nodes
  stmt* parse_while();
  stmt* parse_for(const PTok* async_tok);
  stmt* parse_with(const PTok* async_tok);
  stmt* parse_try();
  stmt* parse_function_def(const PTok* start, Span<expr*> decorators, const PTok* async_tok);
  stmt* parse_class_def(const PTok* start, Span<expr*> decorators);
  stmt* parse_decorated();
  stmt* parse_import();
  stmt* parse_from_import();
  stmt* parse_global_nonlocal(bool global);
  stmt* parse_del();
  stmt* parse_return();
  stmt* parse_raise();
  stmt* parse_assert();
  stmt* try_parse_type_alias();
  stmt* try_parse_match();
  Span<type_param*> parse_type_params();
  alias* parse_dotted_alias(bool dotted);
  std::string_view parse_dotted_name();
  arguments* parse_parameters(Op closer, bool annotations);
  withitem* parse_with_item();

  // ---- patterns (parser_pattern.cc)
  match_case* parse_case_block();
  pattern* parse_patterns();
  pattern* parse_pattern();
  pattern* parse_or_pattern();
  pattern* parse_closed_pattern();
  pattern* parse_star_or_pattern();
  pattern* parse_sequence_pattern(Op closer, const PTok& open);
  pattern* parse_mapping_pattern();
  pattern* parse_class_pattern(expr* cls);
  expr* parse_signed_number();
  expr* parse_literal_expr_for_pattern();
  expr* parse_name_or_attr();
  std::string_view parse_capture_name();

  // ---- expressions (parser_expr.cc)
  expr* parse_star_expressions();
  expr* parse_star_expression();
  expr* parse_star_named_expression();
  expr* parse_named_expression();
  expr* parse_expression();
  expr* parse_disjunction();
  expr* parse_conjunction();
  expr* parse_inversion();
  expr* parse_comparison();
  expr* parse_bitwise_or();
  expr* parse_binary(int min_precedence);
  expr* parse_factor();
  expr* parse_power();
  expr* parse_await_primary();
  expr* parse_primary();
  expr* parse_trailers(expr* e, const PTok& start);
  expr* parse_atom();
  expr* parse_paren_atom();
  expr* parse_list_atom();
  expr* parse_brace_atom();
  expr* parse_lambda();
  expr* parse_yield_expr();
  expr* parse_slices();
  expr* parse_slice();
  expr* parse_call(expr* func, const PTok& start);
  Span<comprehension*> parse_comprehension_clauses();
  expr* parse_star_targets();
  expr* parse_star_target();
  expr* make_tuple_from(size_t mark, const PTok& start);
  void parse_call_arguments(Span<expr*>* args, Span<keyword*>* keywords, bool allow_genexp,
                            const PTok& open, expr** genexp_out);
  bool starts_expression(const PTok& t) const;

  // ---- strings (parser_string.cc)
  expr* parse_strings();
  void validate_string_token(const PTok& t, bool is_bytes);

  // ---- targets (parser_target.cc)
  void set_store(expr* e, bool del);
  const char* describe(const expr* e) const;
  void check_aug_target(expr* e);

  // ---- state
  const SourceFile& source_;
  std::string_view src_text_;
  Arena& arena_;
  ParserBuffers& buffers_;
  std::vector<PTok>& toks_;
  size_t pos_ = 0;
  size_t node_count_ = 0;
  expr* last_bare_tuple_ = nullptr;  // the latest tuple built without parentheses
  Scratch<expr*>& exprs_;
  Scratch<stmt*>& stmts_;
  Scratch<keyword*>& keywords_;
  Scratch<cmpop>& cmpops_;
  Scratch<std::string_view>& names_;
  Scratch<StrPiece>& pieces_;
  Scratch<Node*>& nodes_;  // comprehension, alias, withitem, excepthandler, match_case, pattern, arg, type_param

  template <class T>
  Span<T*> commit_nodes(size_t mark) {
    Span<Node*> s = nodes_.commit(mark, arena_);
    return Span<T*>{reinterpret_cast<T**>(s.data), s.size};
  }

  // Speculative parsing (soft keywords, parenthesised with-items): run `f`;
  // if it throws, rewind tokens and scratch lists and return null.
  template <class F>
  auto attempt(F&& f) -> decltype(f()) {
    int saved_depth = depth_;
    size_t saved_pos = pos_, e = exprs_.mark(), s = stmts_.mark(), k = keywords_.mark(),
           c = cmpops_.mark(), n = names_.mark(), p = pieces_.mark(), d = nodes_.mark();
    try {
      return f();
    } catch (const SyntaxError&) {
      pos_ = saved_pos;
      depth_ = saved_depth;
      exprs_.truncate(e), stmts_.truncate(s), keywords_.truncate(k), cmpops_.truncate(c);
      names_.truncate(n), pieces_.truncate(p), nodes_.truncate(d);
      return nullptr;
    }
  }
};

}  // namespace npufuse::frontend::detail
