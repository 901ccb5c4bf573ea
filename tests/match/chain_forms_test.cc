// Chains whose form decides which operator is right: the matcher must report
// the chain as it is, never a neighbouring rule that would drop a step
// (a de-interleave, a learned sink, a GQA repeat in another layout).
#include <gtest/gtest.h>

#include <set>

#include "match_support.h"

namespace npufuse::match {
namespace {

struct Found {
  std::multiset<std::string> rules;
  std::string listing;
};

Found matches_in(const std::string& path, const std::string& cls) {
  auto graphs = testing::load_graphs(path, {cls});
  Found out;
  for (const model::FunctionDataflow& g : graphs->graphs) {
    MatchResult r = match_patterns(testing::compiled_rules().patterns, g);
    for (const Match& m : r.matches) {
      out.rules.insert(m.pattern->rule->id);
      out.listing += "  " + m.pattern->rule->id + " (" + m.pattern->alternative + ")\n";
    }
  }
  return out;
}

std::string source(const std::string& relative) { return std::string(NPUFUSE_SOURCE_DIR) + "/" + relative; }

// HF DeepSeek-V3's apply_rotary_pos_emb_interleave: even/odd lanes gathered,
// then rotate_half. A half-mode operator on that chain would need the reorder
// kept; the plan must show the interleaved chain alone (pitfalls: never map
// half to interleave or the reverse).
TEST(ChainForms, DeinterleavedRopeIsReportedAsInterleavedOnly) {
  Found f = matches_in(source("rules/rope/fixtures/rope_deinterleave_half_match_latent_layer.py"), "LatentRopeAttention");
  EXPECT_EQ(f.rules.count("rope.rope_deinterleave_half"), 1u) << f.listing;
  for (const char* half : {"rope.rope_half", "rope.rope_half_bsnd", "rope.rope_half_rotary_mul", "rope.rope_half_split"})
    EXPECT_EQ(f.rules.count(half), 0u) << half << " offered on de-interleaved lanes:\n" << f.listing;
}

// Gemma repeats K/V heads on axis 2 before the head transpose: that repeat is
// GQA expansion, and the FIA match must cover it rather than start after it.
TEST(ChainForms, GemmaRepeatIsPartOfTheAttentionMatch) {
  Found f = matches_in(source("tests/models/gemma_style/model.py"), "GemmaAttention");
  EXPECT_EQ(f.rules.count("attention.fia_prefill_bsnd_repeat"), 1u) << f.listing;
  EXPECT_EQ(f.rules.count("attention.fia_prefill"), 0u) << f.listing;
}

// GPT-OSS's learned sink joins the softmax: only FIA v2's learnable_sink keeps
// it, and no plain FIA rule may claim the core (that would drop the sink).
TEST(ChainForms, SinkAttentionIsNeverPlainFia) {
  Found f = matches_in(source("tests/models/gpt_oss_like/model.py"), "GptOssAttention");
  EXPECT_EQ(f.rules.count("attention.attention_sinks_masked_fill"), 1u) << f.listing;
  for (const char* plain : {"attention.fia_prefill", "attention.fia_prefill_where_mask", "attention.fia_decode_additive_mask"})
    EXPECT_EQ(f.rules.count(plain), 0u) << plain << " claims the sink core:\n" << f.listing;
}

}  // namespace
}  // namespace npufuse::match
