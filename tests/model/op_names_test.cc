// One computation, one canonical name, whatever the spelling.
#include "model/op_names.h"

#include <gtest/gtest.h>

#include "model/forward_census.h"

namespace npufuse::model {
namespace {

TEST(CanonicalOp, PowerSpellingsAreOneOp) {
  EXPECT_EQ(canonical_call("torch.pow").name, "pow");
  EXPECT_EQ(canonical_call("torch.square").name, "pow");
  EXPECT_EQ(canonical_call("pow").name, "pow");  // x.pow(2)
  EXPECT_EQ(canonical_binop(frontend::ast::operator_::Pow), "pow");  // x ** 2
}

TEST(CanonicalOp, ModulePrefixesAndInPlaceUnderscoreGo) {
  EXPECT_EQ(canonical_call("torch.nn.functional.silu").name, "silu");
  EXPECT_EQ(canonical_call("F.silu").name, "silu");
  CanonicalOp add = canonical_call("add_");
  EXPECT_EQ(add.name, "add");
  EXPECT_TRUE(add.in_place);
  EXPECT_FALSE(canonical_call("torch.add").in_place);
  EXPECT_EQ(canonical_call("__init__").name, "__init__");
  EXPECT_EQ(canonical_binop(frontend::ast::operator_::MatMult), "matmul");
  EXPECT_EQ(canonical_call("torch.bmm").name, "matmul");
}

TEST(CanonicalOp, CastsAreOneOp) {
  EXPECT_EQ(canonical_call("float").name, "to");
  EXPECT_EQ(canonical_call("type_as").name, "to");
  EXPECT_EQ(canonical_call("to").name, "to");
}

TEST(ForwardCensus, SeesOpsThroughHelpersAndKeepsCallOrder) {
  std::string text =
      "import torch\n"
      "from torch import nn\n"
      "def scale(x):\n"
      "    return torch.rsqrt(x.pow(2).mean(-1, keepdim=True))\n"
      "class Block(nn.Module):\n"
      "    def forward(self, x):\n"
      "        h = x + self.attn(self.norm1(x))\n"
      "        for layer in enumerate(self.extra):\n"
      "            h = layer(h)\n"
      "        return self.mlp(self.norm2(h)) * scale(h)\n";
  SourceSet sources = SourceSet::from_texts({{"m.py", text}});
  ForwardCensus c = census_forward(sources, *sources.find_class("Block"));
  EXPECT_TRUE(c.ops.count("rsqrt"));
  EXPECT_TRUE(c.ops.count("pow"));
  EXPECT_TRUE(c.ops.count("mean"));
  EXPECT_TRUE(c.helpers.count("scale"));
  std::vector<std::string> expected = {"norm1", "attn", "extra", "norm2", "mlp"};
  EXPECT_EQ(c.child_calls, expected);
}

}  // namespace
}  // namespace npufuse::model
