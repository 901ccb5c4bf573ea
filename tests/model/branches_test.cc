// Branch conditions of the test models, classified.
#include <gtest/gtest.h>

#include <algorithm>

#include "model_test_support.h"

namespace npufuse::model {
namespace {

using testing::load_model;

const BranchCondition* branch_at(const Inventory& inv, std::string_view function, int line) {
  for (const BranchCondition& b : inv.branches)
    if (b.function == function && b.where.line == line) return &b;
  return nullptr;
}

bool has_kind(const BranchCondition& b, BranchKind k) { return std::find(b.kinds.begin(), b.kinds.end(), k) != b.kinds.end(); }

bool has(const std::vector<std::string>& v, std::string_view s) { return std::find(v.begin(), v.end(), s) != v.end(); }

TEST(Branches, LlamaDecodeMaskAndCacheUpdate) {
  auto m = load_model("llama_like", true);
  const BranchCondition* mask = branch_at(m->inv, "build_causal_mask", 248);
  ASSERT_NE(mask, nullptr);
  EXPECT_TRUE(has_kind(*mask, BranchKind::PrefillDecode));
  EXPECT_EQ(mask->true_stage, "decode");  // q_len == 1
  const BranchCondition* cache = branch_at(m->inv, "LlamaAttention.forward", 190);
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(cache->true_stage, "with_cache");
  EXPECT_TRUE(has(cache->then_calls, "past_key_value.update"));
  const BranchCondition* dropout = branch_at(m->inv, "LlamaAttention.forward", 201);
  ASSERT_NE(dropout, nullptr);
  EXPECT_EQ(dropout->form, "ternary");
  EXPECT_TRUE(has_kind(*dropout, BranchKind::TrainingOnly));
  EXPECT_FALSE(has_kind(*dropout, BranchKind::PrefillDecode));
}

TEST(Branches, AMaskThatOnlyPrefillBuildsMakesItsNoneTestAStageBranch) {
  // Transformer.forward: `mask = None` then `if seqlen > 1: mask = torch.full(...)`;
  // MLA.forward, which is handed that mask: `if mask is not None:` is prefill.
  auto m = load_model("deepseek_v3_like", true);
  const BranchCondition* add = branch_at(m->inv, "MLA.forward", 274);
  ASSERT_NE(add, nullptr);
  EXPECT_TRUE(has_kind(*add, BranchKind::PrefillDecode));
  EXPECT_EQ(add->true_stage, "prefill");
  // The same name tested in a model that builds its mask in both stages stays unclassified.
  auto llama = load_model("llama_like", true);
  for (const BranchCondition& b : llama->inv.branches) {
    if (b.condition.find("mask is not None") != std::string::npos) {
      EXPECT_EQ(b.true_stage, "") << b.where.str();
    }
  }
}

TEST(Branches, VllmPrefillAndDecodePathsAndTensorParallelReduce) {
  auto m = load_model("vllm_style", true);
  const BranchCondition* prefill = branch_at(m->inv, "PagedAttention.forward", 208);
  ASSERT_NE(prefill, nullptr);
  EXPECT_EQ(prefill->true_stage, "prefill");
  const BranchCondition* decode = branch_at(m->inv, "PagedAttention.forward", 213);
  ASSERT_NE(decode, nullptr);
  EXPECT_EQ(decode->true_stage, "decode");
  EXPECT_TRUE(has(decode->then_calls, "self.decode"));
  const BranchCondition* tp = branch_at(m->inv, "RowParallelLinear.forward", 118);
  ASSERT_NE(tp, nullptr);
  EXPECT_TRUE(has_kind(*tp, BranchKind::Parallel));
  EXPECT_TRUE(has(tp->communication, "dist.all_reduce"));
  // A residual check is no stage, quantisation or parallel branch.
  const BranchCondition* residual = branch_at(m->inv, "Qwen2DecoderLayer.forward", 280);
  ASSERT_NE(residual, nullptr);
  EXPECT_TRUE(residual->kinds.empty());
}

TEST(Branches, DeepSeekQuantisedLinearAttentionDispatchAndCollectives) {
  auto m = load_model("deepseek_v3_like", true);
  const BranchCondition* quant = branch_at(m->inv, "linear", 110);
  ASSERT_NE(quant, nullptr);
  EXPECT_TRUE(has_kind(*quant, BranchKind::Quantization));
  const BranchCondition* scale = branch_at(m->inv, "MLA.forward", 262);
  ASSERT_NE(scale, nullptr);
  EXPECT_TRUE(has_kind(*scale, BranchKind::Quantization));
  const BranchCondition* impl = branch_at(m->inv, "MLA.forward", 250);
  ASSERT_NE(impl, nullptr);
  EXPECT_TRUE(has_kind(*impl, BranchKind::AttentionDispatch));
  const BranchCondition* gather = branch_at(m->inv, "Transformer.forward", 419);
  ASSERT_NE(gather, nullptr);
  EXPECT_TRUE(has_kind(*gather, BranchKind::Parallel));
  EXPECT_TRUE(has(gather->communication, "dist.all_gather"));
  const BranchCondition* mask = branch_at(m->inv, "Transformer.forward", 414);
  ASSERT_NE(mask, nullptr);
  EXPECT_EQ(mask->true_stage, "prefill");  // seqlen > 1
  // __init__ conditions belong to the module tree, not here.
  EXPECT_EQ(branch_at(m->inv, "Linear.__init__", 122), nullptr);
  for (const BranchCondition& b : m->inv.branches) EXPECT_EQ(b.function.find("__init__"), std::string::npos) << b.function;
}

TEST(Branches, Qwen3MoeTrainingOnlyAndNegatedStage) {
  auto m = load_model("qwen3_moe_like", true);
  const BranchCondition* training = branch_at(m->inv, "Qwen3MoeSparseMoeBlock.forward", 176);
  ASSERT_NE(training, nullptr);
  EXPECT_TRUE(has_kind(*training, BranchKind::TrainingOnly));
  const BranchCondition* causal = branch_at(m->inv, "Qwen3MoeAttention.forward", 125);
  ASSERT_NE(causal, nullptr);
  EXPECT_EQ(causal->true_stage, "prefill");  // q_len > 1
  EXPECT_EQ(opposite_stage("prefill"), "decode");
  EXPECT_EQ(opposite_stage("no_cache"), "with_cache");
}

TEST(Branches, StageOfNegatedAndCombinedConditions) {
  SourceSet s = SourceSet::from_texts({{"m.py", R"(import torch
from torch import nn
class A(nn.Module):
    def forward(self, x, is_prefill, start_pos, cache, use_cache, cache_position):
        if not is_prefill:
            x = x + 1
        if start_pos == 0 and cache is None:
            x = x * 2
        if use_cache is not None and cache_position is None:
            x = x - 1
        if x.dtype == torch.int8:
            x = x.float()
        return x
)"}});
  ModelConfig cfg;
  Inventory inv = build_inventory(s, cfg);
  const BranchCondition* neg = branch_at(inv, "A.forward", 5);
  ASSERT_NE(neg, nullptr);
  EXPECT_EQ(neg->true_stage, "decode");
  const BranchCondition* both = branch_at(inv, "A.forward", 7);
  ASSERT_NE(both, nullptr);
  EXPECT_TRUE(has_kind(*both, BranchKind::PrefillDecode));
  EXPECT_EQ(both->true_stage, "");  // prefill and no_cache are different claims
  const BranchCondition* flag = branch_at(inv, "A.forward", 9);
  ASSERT_NE(flag, nullptr);
  EXPECT_EQ(flag->true_stage, "");  // a flag and a position, no cache object
  const BranchCondition* q = branch_at(inv, "A.forward", 11);
  ASSERT_NE(q, nullptr);
  EXPECT_TRUE(has_kind(*q, BranchKind::Quantization));
}

}  // namespace
}  // namespace npufuse::model
