// Sub-chains of the test models' decoder layers: each step found at the
// line where the model computes it, with its stage or dispatch arm, the
// attention-core layout and the intermediates that escape.
#include <gtest/gtest.h>

#include <algorithm>

#include "model_test_support.h"

namespace npufuse::model {
namespace {

const ModuleChain* find_module(const Inventory& inv, const std::string& kind) {
  for (const BlockChains& b : inv.chains)
    for (const ModuleChain& m : b.modules)
      if (m.module == kind) return &m;
  return nullptr;
}

std::vector<const SubChainStep*> steps_of(const ModuleChain& m, const std::string& kind) {
  std::vector<const SubChainStep*> out;
  for (const SubChainStep& s : m.steps)
    if (s.kind == kind) out.push_back(&s);
  return out;
}

// Whether a step of `kind` covers `line` (in the model file).
bool step_at(const ModuleChain& m, const std::string& kind, int line) {
  for (const SubChainStep* s : steps_of(m, kind))
    for (const SourceSpan& sp : s->spans)
      if (sp.file.find("model.py") != std::string::npos && sp.line <= line && line <= std::max(sp.line, sp.end_line)) return true;
  return false;
}

bool escapes(const ModuleChain& m, const std::string& step, const std::string& how_part) {
  return std::any_of(m.escapes.begin(), m.escapes.end(), [&](const IntermediateEscape& e) {
    return e.step == step && e.how.find(how_part) != std::string::npos;
  });
}

TEST(SubChains, LlamaAttentionIsBnsdWithCacheUpdate) {
  auto m = testing::load_model("llama_like", true);
  const ModuleChain* attn = find_module(m->inv, "attention");
  ASSERT_NE(attn, nullptr);
  EXPECT_TRUE(step_at(*attn, "qkv_projection", 182));
  EXPECT_TRUE(step_at(*attn, "qkv_projection", 184));
  EXPECT_TRUE(step_at(*attn, "rope", 87));
  ASSERT_EQ(steps_of(*attn, "rope").size(), 1u);
  EXPECT_NE(steps_of(*attn, "rope")[0]->detail.find("rotate_half"), std::string::npos);
  EXPECT_TRUE(step_at(*attn, "cache_write", 191));
  EXPECT_NE(steps_of(*attn, "cache_write")[0]->detail.find("update"), std::string::npos);
  EXPECT_TRUE(step_at(*attn, "o_projection", 205));
  EXPECT_TRUE(step_at(*attn, "residual_add", 238));
  EXPECT_EQ(attn->layout.layout, "BNSD") << attn->layout.evidence;
  EXPECT_TRUE(escapes(*attn, "rope", "written to the cache"));
  const ModuleChain* ffn = find_module(m->inv, "ffn");
  ASSERT_NE(ffn, nullptr);
  EXPECT_TRUE(step_at(*ffn, "down_projection", 217));
  EXPECT_TRUE(ffn->missing.empty());
}

TEST(SubChains, Qwen3MoeRoutesSoftmaxTopkRenormOneHotLoopIndexAdd) {
  auto m = testing::load_model("qwen3_moe_like", true);
  const ModuleChain* attn = find_module(m->inv, "attention");
  ASSERT_NE(attn, nullptr);
  EXPECT_TRUE(step_at(*attn, "qk_norm", 63));
  EXPECT_TRUE(step_at(*attn, "cache_write", 113));
  EXPECT_TRUE(step_at(*attn, "repeat_kv", 118));
  EXPECT_TRUE(step_at(*attn, "attention_core", 129));
  // The causal mask only exists in prefill, the core itself runs in both stages.
  EXPECT_EQ(steps_of(*attn, "attention_core")[0]->stages, "both");
  EXPECT_EQ(attn->layout.layout, "BNSD");

  const ModuleChain* moe = find_module(m->inv, "moe");
  ASSERT_NE(moe, nullptr);
  EXPECT_TRUE(step_at(*moe, "gate", 168));
  EXPECT_NE(steps_of(*moe, "gate")[0]->detail.find("softmax"), std::string::npos);
  EXPECT_TRUE(step_at(*moe, "topk", 171));
  EXPECT_TRUE(step_at(*moe, "renorm", 173));
  EXPECT_TRUE(step_at(*moe, "dispatch", 181));
  EXPECT_TRUE(step_at(*moe, "experts", 143));
  EXPECT_NE(steps_of(*moe, "experts")[0]->detail.find("loop"), std::string::npos);
  EXPECT_TRUE(step_at(*moe, "combine", 188));
  EXPECT_TRUE(moe->missing.empty());
  // router_logits leave the block; the training-only auxiliary loss is not a step.
  EXPECT_TRUE(escapes(*moe, "gate", "returned"));
  EXPECT_FALSE(step_at(*moe, "topk", 148));
}

TEST(SubChains, DeepSeekV3MlaPathsSplitByDispatchArmAndGroupedSigmoidGate) {
  auto m = testing::load_model("deepseek_v3_like", true);
  const ModuleChain* mla = find_module(m->inv, "mla");
  ASSERT_NE(mla, nullptr);
  EXPECT_FALSE(steps_of(*mla, "q_down").empty());
  EXPECT_TRUE(step_at(*mla, "q_norm", 164));
  EXPECT_FALSE(steps_of(*mla, "kv_down").empty());
  EXPECT_TRUE(step_at(*mla, "nope_rope_split", 247));
  EXPECT_TRUE(step_at(*mla, "rope", 194));
  ASSERT_EQ(steps_of(*mla, "absorb_uk").size(), 1u);
  EXPECT_TRUE(step_at(*mla, "absorb_uk", 266));
  EXPECT_EQ(steps_of(*mla, "absorb_uk")[0]->variant, "not (self.attn_impl == \"naive\")");
  EXPECT_TRUE(step_at(*mla, "absorb_uv", 283));
  EXPECT_TRUE(step_at(*mla, "kv_up", 111));
  EXPECT_EQ(steps_of(*mla, "kv_up")[0]->variant, "self.attn_impl == \"naive\"");
  // One core per arm.
  ASSERT_EQ(steps_of(*mla, "attention_core").size(), 2u);
  EXPECT_NE(steps_of(*mla, "attention_core")[0]->variant, steps_of(*mla, "attention_core")[1]->variant);
  EXPECT_EQ(mla->layout.layout, "BSND");

  const ModuleChain* moe = find_module(m->inv, "moe");
  ASSERT_NE(moe, nullptr);
  EXPECT_FALSE(moe->default_graph);
  EXPECT_NE(steps_of(*moe, "gate")[0]->detail.find("sigmoid"), std::string::npos);
  EXPECT_NE(steps_of(*moe, "gate")[0]->detail.find("bias"), std::string::npos);
  EXPECT_TRUE(step_at(*moe, "topk", 337));
  EXPECT_NE(steps_of(*moe, "topk")[0]->detail.find("grouped"), std::string::npos);
  EXPECT_TRUE(step_at(*moe, "renorm", 343));
  EXPECT_TRUE(step_at(*moe, "shared_expert", 381));
}

TEST(SubChains, VllmStyleIsTndWithPerStageCores) {
  auto m = testing::load_model("vllm_style", true);
  const ModuleChain* attn = find_module(m->inv, "attention");
  ASSERT_NE(attn, nullptr);
  EXPECT_EQ(attn->layout.layout, "TND");
  EXPECT_NE(steps_of(*attn, "qkv_projection")[0]->detail.find("merged"), std::string::npos);
  EXPECT_TRUE(step_at(*attn, "cache_write", 176));
  std::vector<std::string> stages;
  for (const SubChainStep* s : steps_of(*attn, "attention_core")) stages.push_back(s->stages);
  std::sort(stages.begin(), stages.end());
  EXPECT_EQ(stages, (std::vector<std::string>{"decode", "prefill"}));
  EXPECT_TRUE(step_at(*attn, "cache_read", 225));
  // The add of the residual happens inside the next norm (add + RMSNorm).
  ASSERT_FALSE(steps_of(*attn, "residual_add").empty());
  EXPECT_NE(steps_of(*attn, "residual_add")[0]->detail.find("inside"), std::string::npos);
}

}  // namespace
}  // namespace npufuse::model
