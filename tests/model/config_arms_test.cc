// The arm of a configuration branch that a loaded config takes, and dispatch
// tables resolved in the inventory through the config.
#include <gtest/gtest.h>

#include "model_test_support.h"

namespace npufuse::model {
namespace {

const char* kGate = R"(import torch
from torch import nn
class Gate(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.score_func = args.score_func
        self.groups = args.n_group
        self.weight = nn.Parameter(torch.empty(args.n_experts, args.dim))
    def forward(self, x, seqlen):
        scores = torch.nn.functional.linear(x, self.weight)
        if self.score_func == "softmax":
            scores = scores.softmax(dim=-1)
        else:
            scores = scores.sigmoid()
        if self.groups > 1:
            scores = scores * 2
        if seqlen > 1:
            scores = scores + 1
        return scores
)";

const BranchCondition* at_line(const Inventory& inv, int line) {
  for (const BranchCondition& b : inv.branches)
    if (b.where.line == line) return &b;
  return nullptr;
}

TEST(ConfigArms, ConfigChoiceTakesTheArmTheConfigSelects) {
  for (const char* func : {"softmax", "sigmoid"}) {
    SourceSet s = SourceSet::from_texts({{"m.py", kGate}});
    ModelConfig cfg = ModelConfig::from_json({{"score_func", func}, {"n_group", 1}, {"n_experts", 4}, {"dim", 8}}, "c.json");
    Inventory inv = build_inventory(s, cfg);
    const BranchCondition* score = at_line(inv, 11);
    ASSERT_NE(score, nullptr);
    EXPECT_EQ(score->config_arm, std::string(func) == "softmax" ? "then" : "else") << score->config_value;
    EXPECT_NE(score->config_value.find(func == std::string("softmax") ? "True" : "False"), std::string::npos) << score->config_value;
    const BranchCondition* groups = at_line(inv, 15);
    ASSERT_NE(groups, nullptr);
    EXPECT_EQ(groups->config_arm, "else");
    // A test on the forward's own values is not decided by the config.
    const BranchCondition* stage = at_line(inv, 17);
    ASSERT_NE(stage, nullptr);
    EXPECT_EQ(stage->config_arm, "");
  }
}

const char* kBiasedGate = R"(import torch
from torch import nn
class Gate(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.dim = args.dim
        self.weight = nn.Parameter(torch.empty(args.n_experts, args.dim))
        self.bias = nn.Parameter(torch.empty(args.n_experts)) if self.dim == 16 else None
        self.extra = nn.Parameter(torch.empty(args.n_experts)) if self.dim == 16 else None
        if args.late:
            self.extra = None
    def forward(self, x):
        scores = torch.nn.functional.linear(x, self.weight)
        if self.bias is not None:
            scores = scores + self.bias
        if self.bias is None:
            scores = scores * 2
        if self.extra is None:
            scores = scores - 1
        return scores
)";

TEST(ConfigArms, AnAttributeInitSetsToNoneByAConfigTestIsDecided) {
  for (int dim : {16, 8}) {
    SourceSet s = SourceSet::from_texts({{"m.py", kBiasedGate}});
    ModelConfig cfg = ModelConfig::from_json({{"dim", dim}, {"n_experts", 4}, {"late", false}}, "c.json");
    Inventory inv = build_inventory(s, cfg);
    const BranchCondition* set = at_line(inv, 14);
    const BranchCondition* unset = at_line(inv, 16);
    ASSERT_NE(set, nullptr);
    ASSERT_NE(unset, nullptr);
    EXPECT_EQ(set->config_arm, dim == 16 ? "then" : "else") << set->config_value;
    EXPECT_EQ(unset->config_arm, dim == 16 ? "else" : "then") << unset->config_value;
    EXPECT_EQ(set->config_value, dim == 16 ? "dim == 16 = True: self.bias is set" : "dim == 16 = False: self.bias is None");
    // Assigned twice in __init__: which assignment holds is not told by one test.
    const BranchCondition* extra = at_line(inv, 18);
    ASSERT_NE(extra, nullptr);
    EXPECT_EQ(extra->config_arm, "");
  }
}

TEST(ConfigArms, WithoutAConfigNoArmIsClaimed) {
  SourceSet s = SourceSet::from_texts({{"m.py", kGate}});
  ModelConfig cfg;
  Inventory inv = build_inventory(s, cfg);
  const BranchCondition* score = at_line(inv, 11);
  ASSERT_NE(score, nullptr);
  EXPECT_EQ(score->config_arm, "");
}

TEST(ConfigArms, InventoryResolvesTheAttentionTableThroughTheConfig) {
  auto m = testing::load_model("llama_like", true);
  const ModuleChain* attn = nullptr;
  for (const BlockChains& b : m->inv.chains)
    for (const ModuleChain& c : b.modules)
      if (c.module == "attention") attn = &c;
  ASSERT_NE(attn, nullptr);
  bool core = false;
  for (const SubChainStep& st : attn->steps) {
    if (st.kind != "attention_core") continue;
    core = true;
    EXPECT_EQ(st.detail.find("could not be resolved"), std::string::npos) << st.detail;
  }
  EXPECT_TRUE(core);
}

}  // namespace
}  // namespace npufuse::model
