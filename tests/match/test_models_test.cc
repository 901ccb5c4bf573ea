// The matcher on the decoder layers of the test models: what a user of each
// architecture should be offered, and what must never be offered.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "match_support.h"

namespace npufuse::match {
namespace {

struct LayerMatches {
  std::map<std::string, int> count;        // rule id -> unconditional matches
  std::map<std::string, int> conditional;  // rule id -> matches on one branch of an if
  std::string listing;               // for failure messages
};

LayerMatches match_layer(const std::string& model, const std::string& cls) {
  auto graphs = testing::load_graphs(std::string(NPUFUSE_SOURCE_DIR) + "/tests/models/" + model + "/model.py", {cls});
  LayerMatches out;
  for (const model::FunctionDataflow& g : graphs->graphs) {
    MatchResult r = match_patterns(testing::compiled_rules().patterns, g);
    for (const Match& m : r.matches) {
      // A match that holds only on a branch the model may not take is
      // reported with its condition; here only unconditional ones count.
      if (!m.condition.empty()) {
        out.listing += "  (" + m.pattern->rule->id + " if " + m.condition + ")\n";
        ++out.conditional[m.pattern->rule->id];
        continue;
      }
      ++out.count[m.pattern->rule->id];
      out.listing += "  " + m.pattern->rule->id + " (" + m.pattern->alternative + ") at " +
                     (m.spans.empty() ? std::string("?") : m.spans.front().str()) + "\n";
    }
  }
  return out;
}

int count(const LayerMatches& m, const std::string& rule) {
  auto it = m.count.find(rule);
  return it == m.count.end() ? 0 : it->second;
}

TEST(TestModels, LlamaDecoderLayerOffersNormsRopeAndSwiGlu) {
  LayerMatches m = match_layer("llama_like", "LlamaDecoderLayer");
  EXPECT_EQ(count(m, "norm.rms_norm"), 2) << m.listing;
  // apply_rotary_pos_emb rotates q and k in one call: one match, both anchors.
  EXPECT_EQ(count(m, "rope.rope_half"), 1) << m.listing;
  EXPECT_EQ(count(m, "ffn.swiglu"), 1) << m.listing;
  // The first residual sum feeds the post-attention norm and the second residual.
  EXPECT_EQ(count(m, "norm.add_rms_norm"), 1) << m.listing;
}

TEST(TestModels, Qwen3DecoderLayerAlsoNormalisesQueriesAndKeys) {
  LayerMatches m = match_layer("qwen3_like", "Qwen3DecoderLayer");
  EXPECT_GE(count(m, "norm.rms_norm"), 2) << m.listing;
  EXPECT_EQ(count(m, "ffn.swiglu"), 1) << m.listing;
}

// A norm class's own forward says nothing about where the norm is applied:
// a model without QK-norm is offered none, in any of its classes.
TEST(TestModels, LlamaIsNeverOfferedAQkNorm) {
  for (const char* cls : {"LlamaRMSNorm", "LlamaAttention", "LlamaDecoderLayer", "LlamaModel", "LlamaForCausalLM"}) {
    LayerMatches m = match_layer("llama_like", cls);
    EXPECT_EQ(count(m, "norm.qk_norm") + m.conditional["norm.qk_norm"], 0) << cls << ":\n" << m.listing;
  }
}

TEST(TestModels, Qwen3AttentionNormalisesQueriesAndKeysPerHead) {
  LayerMatches m = match_layer("qwen3_like", "Qwen3Attention");
  EXPECT_EQ(count(m, "norm.qk_norm"), 1) << m.listing;
}

TEST(TestModels, GemmaNormIsNeverAPlainRmsNorm) {
  LayerMatches m = match_layer("gemma_style", "GemmaDecoderLayer");
  EXPECT_EQ(count(m, "norm.rms_norm"), 0) << m.listing;
  // The norm's `(1 + weight)` sits on the branch its default flag takes.
  EXPECT_GE(m.conditional["norm.gemma_rms_norm"] + count(m, "norm.gemma_rms_norm"), 1) << m.listing;
}

TEST(TestModels, GptOssClampedGluIsNeverPlainSwiGlu) {
  LayerMatches m = match_layer("gpt_oss_like", "GptOssDecoderLayer");
  EXPECT_EQ(count(m, "ffn.swiglu"), 0) << m.listing;
}

}  // namespace
}  // namespace npufuse::match
