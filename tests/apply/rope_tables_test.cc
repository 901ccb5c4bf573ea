// apply builds the rotary cos/sin tables once (rope.rope_cos_sin_precompute,
// RULE["apply"]["built_once"]), and refuses, saying why, where a table built
// at __init__ could go stale.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "apply/patch_plan.h"
#include "apply_test_support.h"

namespace npufuse::apply {
namespace {

using testing::plan_for_model_copy;
using testing::replaced;
using testing::ScratchDir;

const char* const kRule = "rope.rope_cos_sin_precompute@";

bool applied(const PatchSet& set) {
  return std::any_of(set.applied.begin(), set.applied.end(), [](const std::string& id) { return id.rfind(kRule, 0) == 0; });
}

// The manual step apply gives the candidate, or "".
std::string manual_step(const PatchSet& set) {
  for (const ManualStep& m : set.manual)
    if (m.candidate.rfind(kRule, 0) == 0) return m.what;
  return "";
}

TEST(RopeTables, BuiltAtTheEndOfInitAndSelectedPerCall) {
  ScratchDir dir("rope_tables");
  PatchSet set = make_patches(PatchRequest{plan_for_model_copy(dir, "llama_like"), {}, {}});
  ASSERT_TRUE(applied(set)) << manual_step(set);
  const std::string& patched = set.files.at(0).patched;
  // config.max_position_embeddings is the config dataclass's field; the
  // temporaries stay locals of __init__, the tables are buffers.
  EXPECT_NE(patched.find("        self.register_buffer(\"inv_freq\", inv_freq, persistent=False)\n"
                         "        t = torch.arange(config.max_position_embeddings, dtype=torch.float32)\n"
                         "        freqs = torch.outer(t, self.inv_freq)\n"
                         "        emb = torch.cat((freqs, freqs), dim=-1)\n"
                         "        self.register_buffer(\"cos_cached\", emb.cos(), persistent=False)\n"
                         "        self.register_buffer(\"sin_cached\", emb.sin(), persistent=False)\n"),
            std::string::npos)
      << patched;
  EXPECT_NE(patched.find("        cos = torch.index_select(self.cos_cached, 0, position_ids.reshape(-1)).view(*position_ids.shape, -1)\n"),
            std::string::npos);
  // Nothing of the per-call computation is left in the forward.
  EXPECT_EQ(patched.find("torch.outer(t, self.inv_freq)\n        emb = torch.cat((freqs, freqs), dim=-1)\n        cos ="),
            std::string::npos);
  EXPECT_EQ(patched.find("angles = position_ids.float()"), std::string::npos);
}

TEST(RopeTables, NamesTakenInInitAndTheClassAreAvoided) {
  ScratchDir dir("rope_tables_names");
  PatchSet set = make_patches(PatchRequest{
      plan_for_model_copy(dir, "llama_like",
                          [](std::string text) {
                            return replaced(text, "        self.register_buffer(\"inv_freq\", inv_freq, persistent=False)\n",
                                            "        self.register_buffer(\"inv_freq\", inv_freq, persistent=False)\n"
                                            "        t = dim\n        self.cos_cached = None\n");
                          }),
      {}, {}});
  ASSERT_TRUE(applied(set)) << manual_step(set);
  const std::string& patched = set.files.at(0).patched;
  EXPECT_NE(patched.find("        npu_t = torch.arange(config.max_position_embeddings, dtype=torch.float32)\n"
                         "        freqs = torch.outer(npu_t, self.inv_freq)\n"),
            std::string::npos)
      << patched;
  EXPECT_NE(patched.find("self.register_buffer(\"npu_cos_cached\", emb.cos(), persistent=False)"), std::string::npos);
  EXPECT_NE(patched.find("torch.index_select(self.npu_cos_cached, 0,"), std::string::npos);
}

struct Refusal {
  const char* name;
  const char* from;
  const char* to;
  const char* said;  // part of the manual step
};

class RopeTablesRefused : public ::testing::TestWithParam<Refusal> {};

TEST_P(RopeTablesRefused, StaysAManualStepWithTheReason) {
  const Refusal& r = GetParam();
  ScratchDir dir(std::string("rope_refused_") + r.name);
  PatchSet set = make_patches(PatchRequest{
      plan_for_model_copy(dir, "llama_like", [&](std::string text) { return replaced(text, r.from, r.to); }), {}, {}});
  EXPECT_FALSE(applied(set));
  EXPECT_NE(manual_step(set).find(r.said), std::string::npos) << manual_step(set);
}

INSTANTIATE_TEST_SUITE_P(
    Stale, RopeTablesRefused,
    ::testing::Values(
        // A decorator may rescale inv_freq before each call (HF's dynamic_rope_update).
        Refusal{"decorator", "    @torch.no_grad()\n    def forward(self, x: torch.Tensor, position_ids",
                "    @torch.no_grad()\n    @dynamic_rope_update\n    def forward(self, x: torch.Tensor, position_ids",
                "is decorated with @dynamic_rope_update"},
        // Another method changes the frequencies after __init__.
        Refusal{"changed", "    @torch.no_grad()\n    def forward(self, x: torch.Tensor, position_ids",
                "    def rescale(self, factor):\n        self.inv_freq.mul_(factor)\n\n"
                "    @torch.no_grad()\n    def forward(self, x: torch.Tensor, position_ids",
                "self.inv_freq is changed after __init__, at "},
        // A checkpoint may carry its own inv_freq, loaded after the tables were built.
        Refusal{"persistent", "self.register_buffer(\"inv_freq\", inv_freq, persistent=False)",
                "self.register_buffer(\"inv_freq\", inv_freq)", "is a persistent buffer"},
        // No length to build the tables over.
        Refusal{"no_length", "    def __init__(self, config: LlamaLikeConfig):\n        super().__init__()\n        dim = config.head_dim",
                "    def __init__(self, dim: int, theta: float):\n        super().__init__()",
                "knows no max_position_embeddings: it has none of max_position_embeddings, "
                "self.max_position_embeddings"}),
    [](const ::testing::TestParamInfo<Refusal>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace npufuse::apply
