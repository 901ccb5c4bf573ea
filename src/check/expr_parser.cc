#include "check/expr_parser.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cstdlib>

namespace npufuse::check {
namespace {

enum class Tok { End, Number, String, Name, Op };

struct Token {
  Tok kind = Tok::End;
  std::string text;  // Name / Op spelling; String: decoded contents
  Value number;
  int col = 1;
};

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

class Tokenizer {
 public:
  explicit Tokenizer(std::string_view text) : text_(text) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    for (;;) {
      skip_space();
      Token t;
      t.col = static_cast<int>(pos_) + 1;
      if (pos_ >= text_.size()) {
        out.push_back(t);
        return out;
      }
      char c = text_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c)) ||
          (c == '.' && pos_ + 1 < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_ + 1])))) {
        read_number(t);
      } else if (c == '\'' || c == '"') {
        read_string(t, c);
      } else if (is_name_start(c)) {
        size_t start = pos_;
        while (pos_ < text_.size() && is_name_char(text_[pos_])) ++pos_;
        t.kind = Tok::Name;
        t.text = std::string(text_.substr(start, pos_ - start));
      } else {
        read_operator(t);
      }
      out.push_back(std::move(t));
    }
  }

 private:
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r'))
      ++pos_;
  }

  void read_number(Token& t) {
    size_t start = pos_;
    bool is_float = false;
    if (text_.substr(pos_, 2) == "0x" || text_.substr(pos_, 2) == "0X") {
      pos_ += 2;
      while (pos_ < text_.size() && (std::isxdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    } else {
      while (pos_ < text_.size()) {
        char c = text_[pos_];
        if (std::isdigit(static_cast<unsigned char>(c)) || c == '_') {
          ++pos_;
        } else if (c == '.') {
          is_float = true;
          ++pos_;
        } else if ((c == 'e' || c == 'E')) {
          is_float = true;
          ++pos_;
          if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
        } else {
          break;
        }
      }
    }
    if (pos_ < text_.size() && is_name_char(text_[pos_]))
      throw ExprSyntaxError(static_cast<int>(pos_) + 1, "invalid number literal");
    std::string digits;
    for (char c : text_.substr(start, pos_ - start))
      if (c != '_') digits += c;
    t.kind = Tok::Number;
    t.text = digits;
    if (is_float) {
      char* end = nullptr;
      double d = std::strtod(digits.c_str(), &end);
      if (end != digits.c_str() + digits.size())
        throw ExprSyntaxError(static_cast<int>(start) + 1, fmt::format("invalid number literal '{}'", digits));
      t.number = Value(d);
    } else {
      int base = 10;
      std::string_view body = digits;
      if (body.size() > 2 && (body[1] == 'x' || body[1] == 'X')) {
        base = 16;
        body.remove_prefix(2);
      }
      int64_t v = 0;
      auto [p, ec] = std::from_chars(body.data(), body.data() + body.size(), v, base);
      if (ec != std::errc() || p != body.data() + body.size())
        throw ExprSyntaxError(static_cast<int>(start) + 1,
                              fmt::format("integer literal '{}' is invalid or does not fit in 64 bits", digits));
      t.number = Value(v);
    }
  }

  void read_string(Token& t, char quote) {
    size_t start = pos_++;
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      char c = text_[pos_++];
      if (c == '\\' && pos_ < text_.size()) {
        char e = text_[pos_++];
        switch (e) {
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          case '\\': out += '\\'; break;
          case '\'': out += '\''; break;
          case '"': out += '"'; break;
          default: out += '\\'; out += e; break;
        }
      } else {
        out += c;
      }
    }
    if (pos_ >= text_.size()) throw ExprSyntaxError(static_cast<int>(start) + 1, "unterminated string literal");
    ++pos_;
    t.kind = Tok::String;
    t.text = std::move(out);
  }

  void read_operator(Token& t) {
    static const char* kOps[] = {"==", "!=", "<=", ">=", "//", "<", ">", "+", "-", "*", "/",
                                 "%",  "(",  ")",  "[",  "]",  ","};
    for (const char* op : kOps) {
      std::string_view s(op);
      if (text_.substr(pos_, s.size()) == s) {
        pos_ += s.size();
        t.kind = Tok::Op;
        t.text = std::string(s);
        return;
      }
    }
    throw ExprSyntaxError(static_cast<int>(pos_) + 1,
                          fmt::format("unexpected character '{}'", text_[pos_]));
  }

  std::string_view text_;
  size_t pos_ = 0;
};

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  ExprPtr parse_all() {
    ExprPtr e = parse_or();
    if (peek().kind != Tok::End) fail(peek(), "unexpected text after the expression");
    return e;
  }

 private:
  const Token& peek() const { return toks_[i_]; }
  Token take() { return toks_[i_ < toks_.size() - 1 ? i_++ : i_]; }
  bool is_op(const char* op) const { return peek().kind == Tok::Op && peek().text == op; }
  bool is_word(const char* w) const { return peek().kind == Tok::Name && peek().text == w; }
  bool is_word_at(size_t k, const char* w) const {
    return i_ + k < toks_.size() && toks_[i_ + k].kind == Tok::Name && toks_[i_ + k].text == w;
  }

  [[noreturn]] void fail(const Token& t, const std::string& what) {
    std::string near = t.kind == Tok::End ? "end of expression" : fmt::format("'{}'", t.text);
    throw ExprSyntaxError(t.col, fmt::format("{} (at {})", what, near));
  }
  void expect_op(const char* op) {
    if (!is_op(op)) fail(peek(), fmt::format("expected '{}'", op));
    take();
  }

  static ExprPtr node(ExprKind k, int col) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->col = col;
    return e;
  }

  ExprPtr parse_bool_chain(ExprKind kind, const char* word, ExprPtr (Parser::*next)()) {
    ExprPtr first = (this->*next)();
    if (!is_word(word)) return first;
    auto e = node(kind, first->col);
    e->operands.push_back(std::move(first));
    while (is_word(word)) {
      take();
      e->operands.push_back((this->*next)());
    }
    return e;
  }
  ExprPtr parse_or() { return parse_bool_chain(ExprKind::Or, "or", &Parser::parse_and); }
  ExprPtr parse_and() { return parse_bool_chain(ExprKind::And, "and", &Parser::parse_not); }

  ExprPtr parse_not() {
    if (is_word("not")) {
      int col = take().col;
      auto e = node(ExprKind::Not, col);
      e->operands.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  bool take_compare_op(CompareOp* op) {
    static const std::pair<const char*, CompareOp> kOps[] = {
        {"==", CompareOp::Eq},   {"!=", CompareOp::NotEq},  {"<", CompareOp::Less},
        {"<=", CompareOp::LessEq}, {">", CompareOp::Greater}, {">=", CompareOp::GreaterEq}};
    for (auto& [text, value] : kOps) {
      if (is_op(text)) {
        take();
        *op = value;
        return true;
      }
    }
    if (is_word("in")) {
      take();
      *op = CompareOp::In;
      return true;
    }
    if (is_word("not") && is_word_at(1, "in")) {
      take();
      take();
      *op = CompareOp::NotIn;
      return true;
    }
    if (is_word("is")) fail(peek(), "'is' is not supported; use == or !=");
    return false;
  }

  ExprPtr parse_compare() {
    ExprPtr first = parse_sum();
    CompareOp op;
    if (!take_compare_op(&op)) return first;
    auto e = node(ExprKind::Compare, first->col);
    e->operands.push_back(std::move(first));
    do {
      e->compare_ops.push_back(op);
      e->operands.push_back(parse_sum());
    } while (take_compare_op(&op));
    return e;
  }

  ExprPtr binary(ArithOp op, ExprPtr lhs, ExprPtr rhs) {
    auto e = node(ExprKind::Arith, lhs->col);
    e->arith = op;
    e->operands.push_back(std::move(lhs));
    e->operands.push_back(std::move(rhs));
    return e;
  }

  ExprPtr parse_sum() {
    ExprPtr lhs = parse_term();
    while (is_op("+") || is_op("-")) {
      ArithOp op = take().text == "+" ? ArithOp::Add : ArithOp::Sub;
      lhs = binary(op, std::move(lhs), parse_term());
    }
    return lhs;
  }

  ExprPtr parse_term() {
    ExprPtr lhs = parse_unary();
    for (;;) {
      ArithOp op;
      if (is_op("*")) op = ArithOp::Mul;
      else if (is_op("/")) op = ArithOp::Div;
      else if (is_op("//")) op = ArithOp::FloorDiv;
      else if (is_op("%")) op = ArithOp::Mod;
      else return lhs;
      take();
      lhs = binary(op, std::move(lhs), parse_unary());
    }
  }

  ExprPtr parse_unary() {
    if (is_op("-")) {
      int col = take().col;
      auto e = node(ExprKind::Negate, col);
      e->operands.push_back(parse_unary());
      return e;
    }
    if (is_op("+")) {
      take();
      return parse_unary();
    }
    return parse_primary();
  }

  ExprPtr parse_sequence(const char* close, int col) {
    auto e = node(ExprKind::List, col);
    while (!is_op(close)) {
      e->operands.push_back(parse_or());
      if (!is_op(",")) break;
      take();
    }
    expect_op(close);
    return e;
  }

  ExprPtr parse_primary() {
    Token t = peek();
    switch (t.kind) {
      case Tok::Number: {
        take();
        auto e = node(ExprKind::Literal, t.col);
        e->literal = t.number;
        return e;
      }
      case Tok::String: {
        take();
        auto e = node(ExprKind::Literal, t.col);
        e->literal = Value(t.text);
        return e;
      }
      case Tok::Name: {
        static const char* kReserved[] = {"and", "or", "not", "in", "is", "if", "else", "lambda", "for"};
        for (const char* w : kReserved)
          if (t.text == w) fail(t, "expected a value");
        take();
        if (t.text == "True" || t.text == "False" || t.text == "None") {
          auto e = node(ExprKind::Literal, t.col);
          if (t.text != "None") e->literal = Value(t.text == "True");
          return e;
        }
        if (is_op("(")) {
          if (!is_known_function(t.text))
            fail(t, "unknown function; the functions are is_pow2, align, min, max, len");
          take();
          auto e = parse_sequence(")", t.col);
          e->kind = ExprKind::Call;
          e->name = t.text;
          return e;
        }
        auto e = node(ExprKind::Name, t.col);
        e->name = t.text;
        return e;
      }
      case Tok::Op:
        if (t.text == "(") {
          take();
          if (is_op(")")) fail(peek(), "empty parentheses");
          ExprPtr inner = parse_or();
          if (is_op(")")) {
            take();
            return inner;
          }
          // A tuple: the first item is parsed, the rest are list items.
          expect_op(",");
          auto e = parse_sequence(")", t.col);
          e->operands.insert(e->operands.begin(), std::move(inner));
          return e;
        }
        if (t.text == "[") {
          take();
          return parse_sequence("]", t.col);
        }
        fail(t, "expected a value");
      case Tok::End:
        fail(t, "expected a value");
    }
    fail(t, "expected a value");
  }

  std::vector<Token> toks_;
  size_t i_ = 0;
};

}  // namespace

ExprPtr parse_constraint_expression(std::string_view text) {
  return Parser(Tokenizer(text).run()).parse_all();
}

}  // namespace npufuse::check
