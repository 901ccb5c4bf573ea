// Parsing constraint expressions: what is accepted, and where errors point.
#include "check/expr_parser.h"

#include <gtest/gtest.h>

namespace npufuse::check {
namespace {

int error_column(const std::string& text) {
  try {
    parse_constraint_expression(text);
  } catch (const ExprSyntaxError& e) {
    return e.col();
  }
  return -1;
}

TEST(ExprParserTest, PrecedenceFollowsPython) {
  ExprPtr e = parse_constraint_expression("a or b and not c == 1 + 2 * 3");
  ASSERT_EQ(e->kind, ExprKind::Or);
  ASSERT_EQ(e->operands[1]->kind, ExprKind::And);
  const Expr& not_node = *e->operands[1]->operands[1];
  ASSERT_EQ(not_node.kind, ExprKind::Not);
  const Expr& cmp = *not_node.operands[0];
  ASSERT_EQ(cmp.kind, ExprKind::Compare);
  ASSERT_EQ(cmp.operands[1]->kind, ExprKind::Arith);
  EXPECT_EQ(cmp.operands[1]->arith, ArithOp::Add);
  EXPECT_EQ(cmp.operands[1]->operands[1]->arith, ArithOp::Mul);
}

TEST(ExprParserTest, ChainsAndNotIn) {
  ExprPtr e = parse_constraint_expression("1 <= k <= 1024 and x not in [1, 2]");
  const Expr& chain = *e->operands[0];
  EXPECT_EQ(chain.compare_ops.size(), 2u);
  const Expr& not_in = *e->operands[1];
  ASSERT_EQ(not_in.compare_ops.size(), 1u);
  EXPECT_EQ(not_in.compare_ops[0], CompareOp::NotIn);
}

TEST(ExprParserTest, FactNamesInOrderWithoutRepeats) {
  ExprPtr e = parse_constraint_expression("num_heads % num_kv_heads == 0 and num_heads <= max(head_dim, 8)");
  EXPECT_EQ(fact_names(*e), (std::vector<std::string>{"num_heads", "num_kv_heads", "head_dim"}));
}

TEST(ExprParserTest, LiteralsAndTuples) {
  ExprPtr e = parse_constraint_expression("(1, 2.5, 'a', \"b\", True, None, 0x10)");
  ASSERT_EQ(e->kind, ExprKind::List);
  ASSERT_EQ(e->operands.size(), 7u);
  EXPECT_EQ(e->operands[1]->literal.repr(), "2.5");
  EXPECT_EQ(e->operands[3]->literal.repr(), "'b'");
  EXPECT_TRUE(e->operands[5]->literal.is_none());
  EXPECT_EQ(e->operands[6]->literal.repr(), "16");
}

TEST(ExprParserTest, ErrorsPointAtTheColumn) {
  EXPECT_EQ(error_column("a == "), 6);
  EXPECT_EQ(error_column("a = 1"), 3);
  EXPECT_EQ(error_column("foo(1)"), 1);        // unknown function
  EXPECT_EQ(error_column("x is None"), 6);     // 'is' is outside the subset
  EXPECT_EQ(error_column("'open"), 1);
  EXPECT_EQ(error_column("(a"), 1);           // CPython: '(' was never closed
  EXPECT_EQ(error_column("a b"), 3);
  EXPECT_EQ(error_column("99999999999999999999"), 1);
}

std::string error_message(const std::string& text) {
  try {
    parse_constraint_expression(text);
  } catch (const ExprSyntaxError& e) {
    return e.what();
  }
  return "";
}

// Python accepts these; the constraint language does not.
TEST(ExprParserTest, PythonOutsideTheSubsetIsRefused) {
  EXPECT_EQ(error_message("config.head_dim > 0"), "Attribute is not part of the constraint language");
  EXPECT_EQ(error_message("head_dim ** 2"), "operator Pow is not part of the constraint language (+ - * / // %)");
  EXPECT_EQ(error_message("x if y else z"), "IfExp is not part of the constraint language");
  EXPECT_EQ(error_message("max(a, b, key=c)"), "keyword arguments are not part of the constraint language");
  EXPECT_EQ(error_message("~x"), "'~' is not part of the constraint language");
  EXPECT_EQ(error_message("(a"), "'(' was never closed");
}

}  // namespace
}  // namespace npufuse::check
