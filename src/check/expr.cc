#include "check/expr.h"

#include <algorithm>

namespace npufuse::check {

const char* compare_op_text(CompareOp op) {
  switch (op) {
    case CompareOp::Eq: return "==";
    case CompareOp::NotEq: return "!=";
    case CompareOp::Less: return "<";
    case CompareOp::LessEq: return "<=";
    case CompareOp::Greater: return ">";
    case CompareOp::GreaterEq: return ">=";
    case CompareOp::In: return "in";
    case CompareOp::NotIn: return "not in";
  }
  return "?";
}

const char* arith_op_text(ArithOp op) {
  switch (op) {
    case ArithOp::Add: return "+";
    case ArithOp::Sub: return "-";
    case ArithOp::Mul: return "*";
    case ArithOp::Div: return "/";
    case ArithOp::FloorDiv: return "//";
    case ArithOp::Mod: return "%";
  }
  return "?";
}

static void collect_names(const Expr& e, std::vector<std::string>& out) {
  if (e.kind == ExprKind::Name && std::find(out.begin(), out.end(), e.name) == out.end())
    out.push_back(e.name);
  for (const auto& child : e.operands) collect_names(*child, out);
}

std::vector<std::string> fact_names(const Expr& e) {
  std::vector<std::string> out;
  collect_names(e, out);
  return out;
}

bool is_known_function(const std::string& name) {
  return name == "is_pow2" || name == "align" || name == "min" || name == "max" || name == "len";
}

}  // namespace npufuse::check
