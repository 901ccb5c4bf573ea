#pragma once
// The expression tree of a constraint (`when` / `require` in a catalog entry).
// Only the Python subset of docs/catalog-format.md exists here; anything else
// is rejected by the parser with the column where it starts.
#include <memory>
#include <string>
#include <vector>

#include "check/value.h"

namespace npufuse::check {

enum class ExprKind { Literal, Name, List, Not, Negate, And, Or, Compare, Arith, Call };
enum class CompareOp { Eq, NotEq, Less, LessEq, Greater, GreaterEq, In, NotIn };
enum class ArithOp { Add, Sub, Mul, Div, FloorDiv, Mod };

struct Expr {
  ExprKind kind;
  int col = 1;                          // 1-based column in the expression text
  Value literal;                        // Literal
  std::string name;                     // Name; Call: the function name
  std::vector<std::unique_ptr<Expr>> operands;  // List items, And/Or/Compare operands, Call args
  std::vector<CompareOp> compare_ops;   // Compare: operands.size() - 1 operators
  ArithOp arith = ArithOp::Add;         // Arith: operands[0] op operands[1]
};

using ExprPtr = std::unique_ptr<Expr>;

const char* compare_op_text(CompareOp op);
const char* arith_op_text(ArithOp op);

// Every fact name the expression reads, in first-use order, without repeats.
std::vector<std::string> fact_names(const Expr& e);

// The functions an expression may call (is_pow2, align, min, max, len).
bool is_known_function(const std::string& name);

}  // namespace npufuse::check
