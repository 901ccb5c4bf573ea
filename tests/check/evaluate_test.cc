// Three-valued evaluation of constraint expressions.
#include "check/evaluate.h"

#include <gtest/gtest.h>

#include "check/expr_parser.h"

namespace npufuse::check {
namespace {

class EvaluateTest : public ::testing::Test {
 protected:
  Partial eval(const std::string& text) { return evaluate(*parse_constraint_expression(text), facts); }
  // "True", "False", or "unknown: a, b" (the missing facts).
  std::string answer(const std::string& text) {
    Partial p = eval(text);
    if (p.known()) return p.value->repr();
    std::string out = "unknown:";
    for (const auto& m : p.missing) out += " " + m;
    return out;
  }

  FactSet facts;
};

TEST_F(EvaluateTest, KnownFactsGiveAValue) {
  facts.set("head_dim", Value(128), "config.json: head_dim");
  facts.set("chip", Value("A2"), "--chip");
  EXPECT_EQ(answer("head_dim % 16 == 0"), "True");
  EXPECT_EQ(answer("head_dim > 256"), "False");
  EXPECT_EQ(answer("chip == 'A2'"), "True");
  EXPECT_EQ(answer("head_dim // 3"), "42");
  EXPECT_EQ(answer("head_dim / 256"), "0.5");
  EXPECT_EQ(answer("-7 // 2"), "-4");
  EXPECT_EQ(answer("-7 % 3"), "2");
}

TEST_F(EvaluateTest, MissingFactIsUnknownAndNamed) {
  facts.set("num_heads", Value(32), "config.json: num_attention_heads");
  EXPECT_EQ(answer("num_heads % num_kv_heads == 0"), "unknown: num_kv_heads");
  EXPECT_EQ(answer("head_dim + v_head_dim > num_heads"), "unknown: head_dim v_head_dim");
}

TEST_F(EvaluateTest, ShortCircuitDecidesDespiteUnknown) {
  facts.set("chip", Value("A2"), "--chip");
  EXPECT_EQ(answer("chip == 'inference' and head_dim > 0"), "False");
  EXPECT_EQ(answer("head_dim > 0 and chip == 'inference'"), "False");
  EXPECT_EQ(answer("chip == 'A2' or head_dim > 0"), "True");
  EXPECT_EQ(answer("head_dim > 0 or chip == 'A2'"), "True");
  EXPECT_EQ(answer("chip == 'A2' and head_dim > 0"), "unknown: head_dim");
  EXPECT_EQ(answer("chip == 'A3' or head_dim > 0"), "unknown: head_dim");
  EXPECT_EQ(answer("not (head_dim > 0)"), "unknown: head_dim");
}

TEST_F(EvaluateTest, ChainedComparisons) {
  facts.set("k", Value(8), "code");
  EXPECT_EQ(answer("1 <= k <= 1024"), "True");
  EXPECT_EQ(answer("1 <= k <= 4"), "False");
  EXPECT_EQ(answer("9 <= k <= missing_one"), "False");  // the known pair decides
  EXPECT_EQ(answer("1 <= k <= missing_one"), "unknown: missing_one");
  EXPECT_EQ(answer("0 < 1 < 2 < 3 > 2"), "True");
}

TEST_F(EvaluateTest, MembershipInListsAndStrings) {
  facts.set("layout", Value("BNSD"), "code");
  facts.set("dims", Value(Value::List{Value(64), Value(128)}), "code");
  EXPECT_EQ(answer("layout in ['BSH', 'BNSD']"), "True");
  EXPECT_EQ(answer("layout not in ['BSH', 'BNSD']"), "False");
  EXPECT_EQ(answer("'NS' in layout"), "True");
  EXPECT_EQ(answer("128 in dims"), "True");
  EXPECT_EQ(answer("head_dim in []"), "False");
  EXPECT_EQ(answer("head_dim in [64, 128]"), "unknown: head_dim");
  EXPECT_EQ(answer("64 in [head_dim, 64]"), "unknown: head_dim");  // a list with an unknown item is unknown
  EXPECT_EQ(answer("1.0 in (1, 2)"), "True");
}

TEST_F(EvaluateTest, Functions) {
  facts.set("n", Value(96), "code");
  EXPECT_EQ(answer("is_pow2(64)"), "True");
  EXPECT_EQ(answer("is_pow2(n)"), "False");
  EXPECT_EQ(answer("is_pow2(0)"), "False");
  EXPECT_EQ(answer("align(n, 64)"), "128");
  EXPECT_EQ(answer("align(128, 64)"), "128");
  EXPECT_EQ(answer("min(n, 10, 200)"), "10");
  EXPECT_EQ(answer("max([3, n, 7])"), "96");
  EXPECT_EQ(answer("len([1, 2, 3]) == 3"), "True");
  EXPECT_EQ(answer("len('BSND')"), "4");
  EXPECT_EQ(answer("is_pow2(unknown_fact)"), "unknown: unknown_fact");
}

TEST_F(EvaluateTest, TypeErrorsAreReported) {
  facts.set("layout", Value("BSH"), "code");
  EXPECT_THROW(eval("layout + 1"), EvalError);
  EXPECT_THROW(eval("layout < 3"), EvalError);
  EXPECT_THROW(eval("1 in 5"), EvalError);
  EXPECT_THROW(eval("len(5)"), EvalError);
  EXPECT_THROW(eval("align(3, 0)"), EvalError);
  EXPECT_THROW(eval("is_pow2('x')"), EvalError);
  EXPECT_THROW(eval("1 // 0"), EvalError);
  EXPECT_THROW(eval("min(3)"), EvalError);
}

Constraint make(const std::string& when, const std::string& require) {
  Constraint c;
  c.id = "test_constraint";
  c.origin = "catalog/x/op.toml:10:1";
  c.when_text = when;
  c.require_text = require;
  if (!when.empty()) c.when = parse_constraint_expression(when);
  c.require = parse_constraint_expression(require);
  return c;
}

TEST(EvaluateConstraintTest, ThreeAnswersAndNotApplicable) {
  FactSet facts;
  facts.set("chip", Value("inference"), "--chip");
  facts.set("last_dim", Value(8), "code shapes");
  facts.set("dtype_bytes", Value(2), "config torch_dtype");
  auto c = make("chip == 'inference'", "last_dim * dtype_bytes >= 32");
  ConstraintResult r = evaluate_constraint(c, facts);
  EXPECT_EQ(r.answer, Answer::Violated);
  ASSERT_FALSE(r.evidence.empty());
  EXPECT_EQ(r.evidence[0], "chip = 'inference' (--chip)");

  facts.set("last_dim", Value(4096), "code shapes");
  EXPECT_EQ(evaluate_constraint(c, facts).answer, Answer::Holds);

  facts.erase("last_dim");
  r = evaluate_constraint(c, facts);
  EXPECT_EQ(r.answer, Answer::Unknown);
  EXPECT_EQ(r.missing, std::vector<std::string>{"last_dim"});

  facts.set("chip", Value("A2"), "--chip");
  EXPECT_EQ(evaluate_constraint(c, facts).answer, Answer::NotApplicable);
}

TEST(EvaluateConstraintTest, UnknownWhenWithHoldingRequireHolds) {
  FactSet facts;
  facts.set("head_dim", Value(128), "config");
  auto c = make("chip == 'A2'", "head_dim <= 512");
  EXPECT_EQ(evaluate_constraint(c, facts).answer, Answer::Holds);
  facts.set("head_dim", Value(1024), "config");
  ConstraintResult r = evaluate_constraint(c, facts);
  EXPECT_EQ(r.answer, Answer::Unknown);
  EXPECT_EQ(r.missing, std::vector<std::string>{"chip"});
}

TEST(EvaluateConstraintTest, TypeErrorNamesConstraintAndFile) {
  FactSet facts;
  facts.set("layout", Value("BSH"), "code");
  auto c = make("", "layout > 2");
  try {
    evaluate_constraint(c, facts);
    FAIL() << "expected EvalError";
  } catch (const EvalError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("catalog/x/op.toml:10:1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("test_constraint"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'>' not supported between 'str' and 'int'"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace npufuse::check
