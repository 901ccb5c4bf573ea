// Branch kinds decided from the parts of a condition that decide it.
#include <gtest/gtest.h>

#include <algorithm>

#include "model/inventory.h"

namespace npufuse::model {
namespace {

struct Found {
  SourceSet sources;
  ModelConfig config;
  Inventory inv;
};

std::unique_ptr<Found> branches_of(const std::string& forward_body) {
  std::string text =
      "import torch\n"
      "from torch import nn\n"
      "class Gate(nn.Module):\n"
      "    def __init__(self, dim, n_groups, score_func):\n"
      "        super().__init__()\n"
      "        self.weight = nn.Parameter(torch.empty(8, dim))\n"
      "        self.n_groups = n_groups\n"
      "        self.score_func = score_func\n"
      "        self.bias = nn.Parameter(torch.empty(8)) if dim == 7168 else None\n"
      "    def forward(self, x, mask):\n" +
      forward_body;
  auto f = std::make_unique<Found>(Found{SourceSet::from_texts({{"m.py", text}}), ModelConfig(), {}});
  f->inv = build_inventory(f->sources, f->config);
  return f;
}

const BranchCondition* with_condition(const Inventory& inv, const std::string& condition) {
  for (const BranchCondition& b : inv.branches)
    if (b.condition == condition) return &b;
  return nullptr;
}

bool has_kind(const BranchCondition& b, BranchKind k) { return std::find(b.kinds.begin(), b.kinds.end(), k) != b.kinds.end(); }

TEST(BranchKinds, TrainingFlagPassedToACallIsNotATrainingBranch) {
  auto f = branches_of(
      "        if skip_mask(mask, is_training=self.training):\n"
      "            mask = None\n"
      "        if self.training:\n"
      "            x = x * 2\n"
      "        return x\n");
  const BranchCondition* call = with_condition(f->inv, "skip_mask(mask, is_training=self.training)");
  ASSERT_NE(call, nullptr);
  EXPECT_FALSE(has_kind(*call, BranchKind::TrainingOnly));
  const BranchCondition* plain = with_condition(f->inv, "self.training");
  ASSERT_NE(plain, nullptr);
  EXPECT_TRUE(has_kind(*plain, BranchKind::TrainingOnly));
}

TEST(BranchKinds, TestsOnTheModulesOwnSettingsAreConfigurationChoices) {
  auto f = branches_of(
      "        scores = x @ self.weight.t()\n"
      "        if self.score_func == \"softmax\":\n"
      "            scores = scores.softmax(dim=-1)\n"
      "        else:\n"
      "            scores = scores.sigmoid()\n"
      "        if self.n_groups > 1:\n"
      "            scores = scores.view(x.size(0), self.n_groups, -1)\n"
      "        if self.bias is not None:\n"
      "            scores = scores + self.bias\n"
      "        if scores.size(0) > 1:\n"
      "            scores = scores * 2\n"
      "        return scores\n");
  for (const char* cond : {"self.score_func == \"softmax\"", "self.n_groups > 1", "self.bias is not None"}) {
    const BranchCondition* b = with_condition(f->inv, cond);
    ASSERT_NE(b, nullptr) << cond;
    EXPECT_EQ(b->kinds, std::vector<BranchKind>{BranchKind::ConfigChoice}) << cond;
  }
  // A test on the data is no configuration choice.
  const BranchCondition* data = with_condition(f->inv, "scores.size(0) > 1");
  ASSERT_NE(data, nullptr);
  EXPECT_TRUE(data->kinds.empty());
}

}  // namespace
}  // namespace npufuse::model
