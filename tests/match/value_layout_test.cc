// The axis order of a 4-D attention tensor as the code shows it
// (RULE["match"]["layouts"]): the head split upstream, then the transposes
// of the sequence and head axes.
#include "match/value_layout.h"

#include <gtest/gtest.h>

#include "model/source_set.h"

namespace npufuse::match {
namespace {

// The layout of the value `f` returns.
ValueLayout returned_layout(const std::string& body) {
  model::SourceSet sources = model::SourceSet::from_texts({{"m.py", "import torch\n\ndef f(x, w, other):\n" + body}});
  const model::FunctionDecl* fn = sources.find_function("f");
  EXPECT_NE(fn, nullptr);
  model::FunctionDataflow g = model::build_dataflow(sources, *fn->file, *fn->node);
  EXPECT_EQ(g.returns.size(), 1u);
  return g.returns.empty() ? ValueLayout{} : layout_of(g, g.returns.front());
}

TEST(ValueLayout, AHeadSplitIsBsndAndEachSeqHeadSwapFlipsIt) {
  EXPECT_EQ(returned_layout("    return (x @ w).view(2, 5, 4, 8)\n").layout, "BSND");
  EXPECT_EQ(returned_layout("    return (x @ w).view(2, 5, 4, 8).transpose(1, 2)\n").layout, "BNSD");
  EXPECT_EQ(returned_layout("    return (x @ w).view(2, 5, 4, 8).permute(0, 2, 1, 3)\n").layout, "BNSD");
  EXPECT_EQ(returned_layout("    k = (x @ w).reshape(2, 5, 4, 8).transpose(1, 2)\n    return k.transpose(2, 1)\n").layout, "BSND");
}

TEST(ValueLayout, ElementwiseOpsKeepTheOrderOfTheirInputs) {
  ValueLayout l = returned_layout(
      "    k = (x @ w).view(2, 5, 4, 8)\n"
      "    k = k * torch.rsqrt(k.pow(2).mean(-1, keepdim=True) + 1e-6)\n"
      "    return k * other + k\n");
  EXPECT_EQ(l.layout, "BSND");
  EXPECT_NE(l.evidence.find("view(...) at m.py:4"), std::string::npos) << l.evidence;
}

TEST(ValueLayout, UnknownWhereTheCodeDoesNotShowIt) {
  // No split at all: a function input.
  ValueLayout none = returned_layout("    return x * 2\n");
  EXPECT_EQ(none.layout, "");
  EXPECT_NE(none.evidence.find("no head split"), std::string::npos) << none.evidence;
  // A shape given as one value (HF's `view(hidden_shape)`).
  EXPECT_EQ(returned_layout("    shape = (2, 5, -1, 8)\n    return (x @ w).view(shape)\n").layout, "");
  // A transpose of other axes hides the order.
  ValueLayout other = returned_layout("    return (x @ w).view(2, 5, 4, 8).transpose(-1, -2)\n");
  EXPECT_EQ(other.layout, "");
  EXPECT_NE(other.evidence.find("hides the axes"), std::string::npos) << other.evidence;
  // Two inputs of different orders.
  ValueLayout mixed = returned_layout(
      "    a = (x @ w).view(2, 5, 4, 8)\n"
      "    return a + (x @ w).view(2, 5, 4, 8).transpose(1, 2)\n");
  EXPECT_EQ(mixed.layout, "");
  EXPECT_NE(mixed.evidence.find("disagree"), std::string::npos) << mixed.evidence;
}

}  // namespace
}  // namespace npufuse::match
