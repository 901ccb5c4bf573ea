// Module trees of the project's test models (tests/models/*/model.py). Each
// expectation can be checked by reading the model file at the line named.
#include <gtest/gtest.h>

#include "model_test_support.h"

namespace npufuse::model {
namespace {

using namespace testing;

TEST(LlamaLike, AttentionProjectionsAreLinearsSizedFromConfig) {
  auto m = load_model("llama_like", false);
  const ClassSummary* attn = find_class(m->inv, "LlamaAttention");
  ASSERT_NE(attn, nullptr);
  EXPECT_EQ(attn->role.role, ModuleRole::Attention);
  const Attribute* q = find_attribute(*attn, "q_proj");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->kind, AttributeKind::Submodule);
  EXPECT_EQ(q->module.qualified, "torch.nn.Linear");
  EXPECT_EQ(q->where.line, 168);
  const SizeValue* in = find_size(q->sizes, "in");
  const SizeValue* out = find_size(q->sizes, "out");
  ASSERT_TRUE(in && out);
  EXPECT_EQ(in->value.text, "hidden_size");
  EXPECT_EQ(out->value.text, "num_attention_heads * head_dim");
  EXPECT_FALSE(out->value.is_known());  // no config: symbolic only
}

TEST(LlamaLike, ConfigBindsSizesAndFacts) {
  auto m = load_model("llama_like", true);
  const ClassSummary* attn = find_class(m->inv, "LlamaAttention");
  ASSERT_NE(attn, nullptr);
  const Attribute* k = find_attribute(*attn, "k_proj");
  ASSERT_NE(k, nullptr);
  const SizeValue* out = find_size(k->sizes, "out");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->value.integer(), 8 * 128);
  bool saw_kv = false;
  for (const Fact& f : m->inv.facts) {
    if (f.name == "num_kv_heads") {
      saw_kv = true;
      EXPECT_TRUE(f.known);
      EXPECT_EQ(f.value, 8);
    }
  }
  EXPECT_TRUE(saw_kv);
}

TEST(LlamaLike, PipelineIsEmbeddingBlocksNormHead) {
  auto m = load_model("llama_like", true);
  const ModelStructure& s = m->inv.structure;
  ASSERT_TRUE(s.root);
  EXPECT_EQ(s.root->class_name, "LlamaForCausalLM");
  EXPECT_EQ(s.root->role, ModuleRole::CausalLM);
  ASSERT_TRUE(s.embedding.node && s.blocks.node && s.final_norm.node && s.lm_head.node);
  EXPECT_EQ(s.embedding.node->where.line, 262);
  EXPECT_EQ(s.blocks.node->class_name, "LlamaDecoderLayer");
  EXPECT_EQ(s.blocks.node->count.integer(), 32);
  EXPECT_EQ(s.final_norm.node->where.line, 266);
  EXPECT_EQ(s.lm_head.node->where.line, 299);
  const ModuleNode* norm = s.final_norm.node;
  EXPECT_EQ(norm->role, ModuleRole::RMSNorm);
  // The block's norms are placed by the order the block's forward calls them.
  const ModuleNode* block = s.blocks.node;
  int before = 0, between = 0;
  for (const ModuleNode& c : block->children) {
    if (c.position == "norm before attention") ++before;
    if (c.position == "norm between attention and feed-forward") ++between;
  }
  EXPECT_EQ(before, 1);
  EXPECT_EQ(between, 1);
}

TEST(LlamaLike, RotaryBufferIsFound) {
  auto m = load_model("llama_like", false);
  bool found = false;
  for (const ClassSummary& c : m->inv.classes) {
    if (const Attribute* b = find_attribute(c, "inv_freq")) {
      found = true;
      EXPECT_EQ(b->kind, AttributeKind::Buffer);
      EXPECT_EQ(b->where.line, 67);
      EXPECT_EQ(c.role.role, ModuleRole::Rotary);
    }
  }
  EXPECT_TRUE(found);
}

TEST(Qwen3MoeLike, SparseBlockHasRouterLinearAndExpertList) {
  auto m = load_model("qwen3_moe_like", true);
  const ClassSummary* moe = find_class(m->inv, "Qwen3MoeSparseMoeBlock");
  ASSERT_NE(moe, nullptr);
  EXPECT_EQ(moe->role.role, ModuleRole::MoE);
  const Attribute* gate = find_attribute(*moe, "gate");
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->where.line, 159);
  const SizeValue* out = find_size(gate->sizes, "out");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->value.integer(), 128);
  const Attribute* experts = find_attribute(*moe, "experts");
  ASSERT_NE(experts, nullptr);
  EXPECT_EQ(experts->kind, AttributeKind::ModuleList);
  EXPECT_EQ(experts->where.line, 160);
  ASSERT_NE(experts->module.local, nullptr);
  EXPECT_EQ(experts->module.local->node->name, "Qwen3MoeMLP");
  EXPECT_EQ(experts->count.integer(), 128);
}

TEST(DeepseekV3Like, ModelArgsFieldsResolveThroughParseConfig) {
  auto m = load_model("deepseek_v3_like", true);
  const ModelStructure& s = m->inv.structure;
  ASSERT_TRUE(s.root);
  EXPECT_EQ(s.root->class_name, "Transformer");
  // MLA's q_b_proj is a local ColumnParallelLinear; its size comes from the
  // instance's weight: [n_heads * qk_head_dim / world_size, q_lora_rank].
  const ModuleNode* qb = find_path(*s.root, "Transformer.layers[*].attn.q_b_proj");
  ASSERT_NE(qb, nullptr);
  EXPECT_EQ(qb->role, ModuleRole::Linear);
  const SizeValue* in = find_size(qb->sizes, "in");
  const SizeValue* out = find_size(qb->sizes, "out");
  ASSERT_TRUE(in && out);
  EXPECT_EQ(in->value.integer(), 1536);
  EXPECT_EQ(out->value.integer(), 128 * (128 + 64));
  // The gate is a local module with a 2-D weight and top-k: a router.
  const ClassSummary* gate = find_class(m->inv, "Gate");
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->role.role, ModuleRole::Router);
}

TEST(GemmaStyle, NormScalingByOnePlusWeightIsRecorded) {
  auto m = load_model("gemma_style", false);
  bool offset = false;
  for (const ClassSummary& c : m->inv.classes)
    if (c.role.role == ModuleRole::RMSNorm && c.role.weight_offset_one) offset = true;
  EXPECT_TRUE(offset);
}

TEST(GptjStyle, LayerNormIsNotRmsNorm) {
  auto m = load_model("gptj_style", false);
  ASSERT_TRUE(m->inv.structure.root);
  bool layer_norm = false;
  for (const ModuleNode& c : m->inv.structure.root->children) (void)c;
  std::function<void(const ModuleNode&)> visit = [&](const ModuleNode& n) {
    if (n.role == ModuleRole::LayerNorm) layer_norm = true;
    EXPECT_NE(n.role, ModuleRole::RMSNorm) << n.path;
    for (const ModuleNode& c : n.children) visit(c);
  };
  visit(*m->inv.structure.root);
  EXPECT_TRUE(layer_norm);
}

TEST(AllTestModels, EveryOneHasBlocksAndNoCrash) {
  for (const char* name : {"llama_like", "qwen3_like", "qwen3_moe_like", "deepseek_v3_like", "deepseek_v32_like", "vllm_style",
                           "gptj_style", "gemma_style", "gpt_oss_like"}) {
    SCOPED_TRACE(name);
    auto m = load_model(name, true);
    ASSERT_TRUE(m->inv.structure.root);
    EXPECT_NE(m->inv.structure.blocks.node, nullptr);
    EXPECT_NE(m->inv.structure.embedding.node, nullptr);
  }
}

}  // namespace
}  // namespace npufuse::model

namespace npufuse::model {
namespace {

using namespace testing;

TEST(MoePositions, GateLinearIsTheRouterAndExpertKindsDiffer) {
  auto mixtral_like = load_model("qwen3_moe_like", true);
  const ModuleNode* gate = find_path(*mixtral_like->inv.structure.root, "Qwen3MoeForCausalLM.layers[*].mlp.gate");
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->position, "router");  // Linear(hidden -> num_experts) next to a list of num_experts MLPs
  auto v32 = load_model("deepseek_v32_like", true);
  const ModuleNode* shared = find_path(*v32->inv.structure.root, "DeepseekV32ForCausalLM.layers[*].mlp.shared_experts");
  ASSERT_NE(shared, nullptr);
  EXPECT_EQ(shared->position, "shared experts");
  auto oss = load_model("gpt_oss_like", true);
  const ModuleNode* stacked = find_path(*oss->inv.structure.root, "GptOssForCausalLM.layers[*].mlp.experts");
  ASSERT_NE(stacked, nullptr);
  EXPECT_EQ(stacked->position, "stacked experts");
}

}  // namespace
}  // namespace npufuse::model
