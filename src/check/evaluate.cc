#include "check/evaluate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace npufuse::check {
namespace {

[[noreturn]] void type_error(const Expr& at, const std::string& what) {
  throw EvalError(fmt::format("column {}: {}", at.col, what));
}

Partial known(Value v) { return Partial{std::move(v), {}}; }

void merge_missing(std::vector<std::string>& into, const std::vector<std::string>& from) {
  for (const auto& n : from)
    if (std::find(into.begin(), into.end(), n) == into.end()) into.push_back(n);
}

Partial unknown(std::vector<std::string> missing) {
  std::sort(missing.begin(), missing.end());
  return Partial{std::nullopt, std::move(missing)};
}

int64_t as_integer(const Value& v) { return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int(); }
bool is_integer(const Value& v) { return v.is_int() || v.is_bool(); }

// Python's floor division and modulo on integers (rounding towards -inf).
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

Value arith(const Expr& at, ArithOp op, const Value& a, const Value& b) {
  if (op == ArithOp::Add && a.is_str() && b.is_str()) return Value(a.as_str() + b.as_str());
  if (op == ArithOp::Add && a.is_list() && b.is_list()) {
    Value::List out = a.as_list();
    out.insert(out.end(), b.as_list().begin(), b.as_list().end());
    return Value(std::move(out));
  }
  if (!a.is_number() || !b.is_number())
    type_error(at, fmt::format("unsupported operand types for {}: '{}' and '{}'", arith_op_text(op), a.type_name(),
                               b.type_name()));
  bool zero = b.as_number() == 0.0;
  if (zero && (op == ArithOp::Div || op == ArithOp::FloorDiv || op == ArithOp::Mod))
    type_error(at, fmt::format("division by zero in {} {} {}", a.repr(), arith_op_text(op), b.repr()));
  if (is_integer(a) && is_integer(b)) {
    int64_t x = as_integer(a), y = as_integer(b);
    switch (op) {
      case ArithOp::Add: return Value(x + y);
      case ArithOp::Sub: return Value(x - y);
      case ArithOp::Mul: return Value(x * y);
      case ArithOp::Div: return Value(static_cast<double>(x) / static_cast<double>(y));
      case ArithOp::FloorDiv: return Value(floor_div(x, y));
      case ArithOp::Mod: return Value(floor_mod(x, y));
    }
  }
  double x = a.as_number(), y = b.as_number();
  switch (op) {
    case ArithOp::Add: return Value(x + y);
    case ArithOp::Sub: return Value(x - y);
    case ArithOp::Mul: return Value(x * y);
    case ArithOp::Div: return Value(x / y);
    case ArithOp::FloorDiv: return Value(std::floor(x / y));
    case ArithOp::Mod: return Value(x - std::floor(x / y) * y);
  }
  return Value();
}

bool order(const Expr& at, CompareOp op, const Value& a, const Value& b) {
  int cmp;
  if (a.is_number() && b.is_number()) {
    double x = a.as_number(), y = b.as_number();
    cmp = x < y ? -1 : (x > y ? 1 : 0);
  } else if (a.is_str() && b.is_str()) {
    cmp = a.as_str().compare(b.as_str());
  } else {
    type_error(at, fmt::format("'{}' not supported between '{}' and '{}'", compare_op_text(op), a.type_name(),
                               b.type_name()));
  }
  switch (op) {
    case CompareOp::Less: return cmp < 0;
    case CompareOp::LessEq: return cmp <= 0;
    case CompareOp::Greater: return cmp > 0;
    case CompareOp::GreaterEq: return cmp >= 0;
    default: return false;
  }
}

class Evaluator {
 public:
  explicit Evaluator(const FactSet& facts) : facts_(facts) {}

  Partial eval(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Literal: return known(e.literal);
      case ExprKind::Name: {
        if (const Fact* f = facts_.find(e.name)) return known(f->value);
        return unknown({e.name});
      }
      case ExprKind::List: return eval_list(e);
      case ExprKind::Not: {
        Partial p = eval(*e.operands[0]);
        if (!p.known()) return p;
        return known(Value(!p.value->truthy()));
      }
      case ExprKind::Negate: {
        Partial p = eval(*e.operands[0]);
        if (!p.known()) return p;
        const Value& v = *p.value;
        if (is_integer(v)) return known(Value(-as_integer(v)));
        if (v.is_float()) return known(Value(-v.as_number()));
        type_error(e, fmt::format("bad operand type for unary -: '{}'", v.type_name()));
      }
      case ExprKind::And: return eval_bool_chain(e, /*decider=*/false);
      case ExprKind::Or: return eval_bool_chain(e, /*decider=*/true);
      case ExprKind::Compare: return eval_compare(e);
      case ExprKind::Arith: {
        Partial a = eval(*e.operands[0]);
        Partial b = eval(*e.operands[1]);
        if (!a.known() || !b.known()) {
          merge_missing(a.missing, b.missing);
          return unknown(a.missing);
        }
        return known(arith(e, e.arith, *a.value, *b.value));
      }
      case ExprKind::Call: return eval_call(e);
    }
    return unknown({});
  }

 private:
  Partial eval_list(const Expr& e) {
    Value::List items;
    std::vector<std::string> missing;
    for (const auto& item : e.operands) {
      Partial p = eval(*item);
      if (p.known()) items.push_back(*p.value);
      else merge_missing(missing, p.missing);
    }
    if (!missing.empty()) return unknown(missing);
    return known(Value(std::move(items)));
  }

  // `and` stops at the first known false operand, `or` at the first known
  // true one (the decider); unknown operands before it do not matter.
  Partial eval_bool_chain(const Expr& e, bool decider) {
    std::vector<std::string> missing;
    for (const auto& operand : e.operands) {
      Partial p = eval(*operand);
      if (!p.known()) {
        merge_missing(missing, p.missing);
        continue;
      }
      if (p.value->truthy() == decider) return known(Value(decider));
    }
    if (!missing.empty()) return unknown(missing);
    return known(Value(!decider));
  }

  // Three-valued `a in b`.
  Partial eval_in(const Expr& at, const Partial& item, const Partial& container) {
    if (!container.known()) {
      std::vector<std::string> missing = container.missing;
      merge_missing(missing, item.missing);
      return unknown(missing);
    }
    const Value& box = *container.value;
    if (box.is_str()) {
      if (!item.known()) return unknown(item.missing);
      if (!item.value->is_str())
        type_error(at, fmt::format("'in <str>' requires a str on the left, not '{}'", item.value->type_name()));
      return known(Value(box.as_str().find(item.value->as_str()) != std::string::npos));
    }
    if (!box.is_list()) type_error(at, fmt::format("argument of type '{}' is not a container", box.type_name()));
    if (box.as_list().empty()) return known(Value(false));
    if (!item.known()) return unknown(item.missing);
    for (const auto& candidate : box.as_list())
      if (python_equal(*item.value, candidate)) return known(Value(true));
    return known(Value(false));
  }

  Partial compare_pair(const Expr& at, CompareOp op, const Partial& a, const Partial& b) {
    if (op == CompareOp::In || op == CompareOp::NotIn) {
      Partial r = eval_in(at, a, b);
      if (r.known() && op == CompareOp::NotIn) return known(Value(!r.value->as_bool()));
      return r;
    }
    if (!a.known() || !b.known()) {
      std::vector<std::string> missing = a.missing;
      merge_missing(missing, b.missing);
      return unknown(missing);
    }
    if (op == CompareOp::Eq) return known(Value(python_equal(*a.value, *b.value)));
    if (op == CompareOp::NotEq) return known(Value(!python_equal(*a.value, *b.value)));
    return known(Value(order(at, op, *a.value, *b.value)));
  }

  // `a < b <= c` is `a < b and b <= c`, each operand evaluated once.
  Partial eval_compare(const Expr& e) {
    std::vector<std::string> missing;
    Partial left = eval(*e.operands[0]);
    for (size_t i = 0; i < e.compare_ops.size(); ++i) {
      Partial right = eval(*e.operands[i + 1]);
      Partial r = compare_pair(*e.operands[i + 1], e.compare_ops[i], left, right);
      if (r.known() && !r.value->truthy()) return known(Value(false));
      if (!r.known()) merge_missing(missing, r.missing);
      left = std::move(right);
    }
    if (!missing.empty()) return unknown(missing);
    return known(Value(true));
  }

  Partial eval_call(const Expr& e) {
    std::vector<Value> args;
    std::vector<std::string> missing;
    for (const auto& a : e.operands) {
      Partial p = eval(*a);
      if (p.known()) args.push_back(*p.value);
      else merge_missing(missing, p.missing);
    }
    if (!missing.empty()) return unknown(missing);
    auto want_args = [&](size_t n) {
      if (args.size() != n)
        type_error(e, fmt::format("{}() takes {} argument{} ({} given)", e.name, n, n == 1 ? "" : "s", args.size()));
    };
    auto want_int = [&](const Value& v) {
      if (!is_integer(v)) type_error(e, fmt::format("{}() needs int arguments, not '{}'", e.name, v.type_name()));
      return as_integer(v);
    };
    if (e.name == "is_pow2") {
      want_args(1);
      int64_t x = want_int(args[0]);
      return known(Value(x > 0 && (x & (x - 1)) == 0));
    }
    if (e.name == "align") {
      want_args(2);
      int64_t x = want_int(args[0]), n = want_int(args[1]);
      if (n <= 0) type_error(e, fmt::format("align() needs a positive multiple, not {}", n));
      return known(Value(floor_div(x + n - 1, n) * n));
    }
    if (e.name == "len") {
      want_args(1);
      if (args[0].is_str()) return known(Value(static_cast<int64_t>(args[0].as_str().size())));
      if (args[0].is_list()) return known(Value(static_cast<int64_t>(args[0].as_list().size())));
      type_error(e, fmt::format("object of type '{}' has no len()", args[0].type_name()));
    }
    // min / max: two or more arguments, or one list.
    std::vector<Value> items = args;
    if (args.size() == 1 && args[0].is_list()) items = args[0].as_list();
    if (items.empty() || (args.size() == 1 && !args[0].is_list()))
      type_error(e, fmt::format("{}() needs two or more arguments or one non-empty list", e.name));
    Value best = items[0];
    CompareOp better = e.name == "min" ? CompareOp::Less : CompareOp::Greater;
    for (size_t i = 1; i < items.size(); ++i)
      if (order(e, better, items[i], best)) best = items[i];
    return known(best);
  }

  const FactSet& facts_;
};

void add_evidence(const Expr* e, const FactSet& facts, std::vector<std::string>& out) {
  if (!e) return;
  for (const auto& name : fact_names(*e)) {
    const Fact* f = facts.find(name);
    if (!f) continue;
    std::string line = fmt::format("{} = {} ({})", name, f->value.repr(), f->provenance);
    if (std::find(out.begin(), out.end(), line) == out.end()) out.push_back(line);
  }
}

}  // namespace

Partial evaluate(const Expr& e, const FactSet& facts) { return Evaluator(facts).eval(e); }

const char* answer_name(Answer a) {
  switch (a) {
    case Answer::Holds: return "holds";
    case Answer::Violated: return "violated";
    case Answer::Unknown: return "unknown";
    case Answer::NotApplicable: return "not_applicable";
  }
  return "?";
}

const char* severity_name(Severity s) { return s == Severity::Error ? "error" : "warning"; }

ConstraintResult evaluate_constraint(const Constraint& c, const FactSet& facts) {
  ConstraintResult result;
  result.constraint = &c;
  const char* part = "when";
  const std::string* text = &c.when_text;
  try {
    Partial when = c.when ? evaluate(*c.when, facts) : known(Value(true));
    if (when.known() && !when.value->truthy()) {
      result.answer = Answer::NotApplicable;
      add_evidence(c.when.get(), facts, result.evidence);
      return result;
    }
    part = "require";
    text = &c.require_text;
    Partial require = evaluate(*c.require, facts);
    add_evidence(c.when.get(), facts, result.evidence);
    add_evidence(c.require.get(), facts, result.evidence);
    if (require.known() && require.value->truthy()) {
      result.answer = Answer::Holds;
    } else if (require.known() && when.known()) {
      result.answer = Answer::Violated;
    } else {
      result.answer = Answer::Unknown;
      result.missing = when.missing;
      merge_missing(result.missing, require.missing);
      std::sort(result.missing.begin(), result.missing.end());
    }
    return result;
  } catch (const EvalError& e) {
    throw EvalError(fmt::format("{}: constraint '{}': {} `{}`: {}", c.origin, c.id, part, *text, e.what()));
  }
}

}  // namespace npufuse::check
