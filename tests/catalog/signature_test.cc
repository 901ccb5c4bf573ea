// Reading prototypes and comparing parameter lists.
#include "catalog/signature.h"

#include <gtest/gtest.h>

#include "catalog/signature_compare.h"

namespace npufuse::catalog {
namespace {

TEST(SignatureTest, SchemaGrammar) {
  std::string error;
  auto sig = parse_signature(
      "npu_x.out(Tensor(a!) self, int[2]? pads=None, SymInt[] sizes=[], str layout=\"BSH\", "
      "float eps=1e-06, *, Tensor? bias=None, int[] dims=[1, 1]) -> (Tensor(a!), Tensor)",
      &error);
  ASSERT_TRUE(sig) << error;
  EXPECT_EQ(sig->name, "npu_x");
  EXPECT_EQ(sig->overload, "out");
  ASSERT_EQ(sig->params.size(), 7u);
  EXPECT_EQ(sig->params[0].type, "Tensor(a!)");
  EXPECT_EQ(sig->params[1].type, "int[2]?");
  EXPECT_EQ(sig->params[3].default_value.value_or(""), "\"BSH\"");
  EXPECT_FALSE(sig->params[4].kw_only);
  EXPECT_TRUE(sig->params[5].kw_only);
  EXPECT_EQ(sig->params[6].default_value.value_or(""), "[1, 1]");
  EXPECT_EQ(sig->returns, "(Tensor(a!), Tensor)");
}

TEST(SignatureTest, DocstringPrototypes) {
  std::string error;
  auto typed = parse_signature("torch_npu.npu_rms_norm(Tensor self, Tensor gamma, float epsilon=1e-06) -> (Tensor, Tensor)", &error);
  ASSERT_TRUE(typed) << error;
  EXPECT_EQ(typed->name, "npu_rms_norm");
  EXPECT_EQ(typed->params[2].default_value.value_or(""), "1e-06");
  auto untyped = parse_signature("torch_npu.npu_swiglu(x, dim=-1)", &error);
  ASSERT_TRUE(untyped) << error;
  EXPECT_EQ(untyped->params[0].name, "x");
  EXPECT_EQ(untyped->params[0].type, "");
  auto annotated = parse_signature("npu_y(x: Tensor, *, scale: float = 1.0) -> Tensor", &error);
  ASSERT_TRUE(annotated) << error;
  EXPECT_EQ(annotated->params[1].type, "float");
  EXPECT_TRUE(annotated->params[1].kw_only);
  EXPECT_FALSE(parse_signature("no parentheses here", &error));
  EXPECT_FALSE(parse_signature("npu_z(Tensor x", &error));
}

TEST(SignatureTest, DefaultsNormalise) {
  EXPECT_EQ(normalize_default("'BSH'"), normalize_default("\"BSH\""));
  EXPECT_EQ(normalize_default("1e-6"), normalize_default("1e-06"));
  EXPECT_EQ(normalize_default("1."), normalize_default("1.0"));
  EXPECT_EQ(normalize_default("2^63-1"), "9223372036854775807");
  EXPECT_EQ(normalize_default("2**63-1"), "9223372036854775807");
  EXPECT_EQ(normalize_default("2^31 - 1"), "2147483647");
  EXPECT_EQ(normalize_default("[1, 1]"), normalize_default("[1,1]"));
  EXPECT_EQ(normalize_default("(1,)"), "[1]");
  EXPECT_NE(normalize_default("1e-5"), normalize_default("1e-6"));
  EXPECT_NE(normalize_default("'BSH'"), normalize_default("'BNSD'"));
  EXPECT_EQ(normalize_default("None"), "None");
}

std::string diff_lines(const std::string& a, const std::string& b) {
  std::string error;
  auto x = parse_signature(a, &error);
  auto y = parse_signature(b, &error);
  std::string out;
  for (const auto& d : compare_signatures(x->params, y->params))
    out += d.param + " " + drift_kind_name(d.kind) + " " + d.catalog_side + "|" + d.other_side + "\n";
  return out;
}

TEST(SignatureCompareTest, FindsEachKindOfDifference) {
  EXPECT_EQ(diff_lines("f(Tensor x, float eps=1e-6)", "f(Tensor x, float eps=1e-06)"), "");
  EXPECT_EQ(diff_lines("f(Tensor x, float eps=1e-5)", "f(Tensor x, float eps=1e-06)"),
            "eps default_differs 1e-5|1e-06\n");
  EXPECT_EQ(diff_lines("f(Tensor x, *, int k=1)", "f(Tensor x, int k=1)"), "k kw_only_differs keyword-only|positional\n");
  EXPECT_EQ(diff_lines("f(Tensor x)", "f(Tensor x, int k=1)"), "k extra_in_schema absent|1\n");
  EXPECT_EQ(diff_lines("f(Tensor x, int k=1)", "f(Tensor x)"), "k missing_in_schema 1|absent\n");
  EXPECT_EQ(diff_lines("f(Tensor x, Tensor g)", "f(Tensor self, Tensor g)"), "x name_differs x|self\n");
  EXPECT_EQ(diff_lines("f(Tensor a, Tensor b, Tensor c)", "f(Tensor b, Tensor c, Tensor a)"),
            "a order_differs position 1|position 3\n");
  EXPECT_EQ(diff_lines("f(Tensor x, int k)", "f(Tensor x, int k=0)"), "k default_differs (required)|0\n");
}

}  // namespace
}  // namespace npufuse::catalog
