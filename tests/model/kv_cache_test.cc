// KV-cache organisation of the test models.
#include <gtest/gtest.h>

#include "model_test_support.h"

namespace npufuse::model {
namespace {

using testing::load_model;

int count(const CacheOrganisation& c, std::string_view mechanism) {
  int n = 0;
  for (const CacheAccess& a : c.accesses) n += a.mechanism == mechanism;
  return n;
}

TEST(KvCache, LlamaUpdatesAnHfCacheObject) {
  auto m = load_model("llama_like", false);
  EXPECT_EQ(m->inv.kv_cache.organisation, "contiguous");
  EXPECT_EQ(m->inv.kv_cache.write_index, "append");
  ASSERT_EQ(count(m->inv.kv_cache, "cache_update"), 1);
  // The local cache class's update grows each layer's tensors with cat.
  EXPECT_EQ(count(m->inv.kv_cache, "cat_growth"), 2);
  EXPECT_EQ(count(m->inv.kv_cache, "slice_write"), 0);
  for (const CacheAccess& a : m->inv.kv_cache.accesses) {
    if (a.mechanism == "cache_update") {
      EXPECT_EQ(a.function, "LlamaAttention.forward");
      EXPECT_EQ(a.where.line, 191);
    } else {
      EXPECT_EQ(a.function, "DynamicKVCache.update");
    }
  }
}

TEST(KvCache, Qwen3StaticCacheWritesByPosition) {
  auto m = load_model("qwen3_like", false);
  EXPECT_EQ(m->inv.kv_cache.write_index, "position");
  EXPECT_EQ(count(m->inv.kv_cache, "index_copy"), 2);
}

// StaticKVCache.update returns the preallocated buffers it wrote into, and
// gemma_style attends over its buffers: every slot goes to attention.
TEST(KvCache, PreallocatedBuffersHandedOnWholeAreFound) {
  auto qwen = load_model("qwen3_like", false);
  const CacheAccess* whole = qwen->inv.kv_cache.whole_read();
  ASSERT_NE(whole, nullptr);
  EXPECT_EQ(whole->function, "StaticKVCache.update");
  EXPECT_EQ(whole->text, "k_out");
  EXPECT_EQ(whole->where.line, 93);
  auto gemma = load_model("gemma_style", false);
  ASSERT_NE(gemma->inv.kv_cache.whole_read(), nullptr);
  EXPECT_EQ(gemma->inv.kv_cache.whole_read()->function, "GemmaAttention.forward");
  // Read back through slices up to the valid length, or grown by cat: no.
  EXPECT_EQ(load_model("deepseek_v3_like", false)->inv.kv_cache.whole_read(), nullptr);
  EXPECT_EQ(load_model("llama_like", false)->inv.kv_cache.whole_read(), nullptr);
}

TEST(KvCache, WholeReadNeedsAReadAfterTheWriteNotThroughASubscript) {
  SourceSet s = SourceSet::from_texts({{"m.py", R"(import torch
from torch import nn
class Attn(nn.Module):
    def forward(self, q, k, v, start_pos, end_pos):
        full = self.k_cache
        self.k_cache[:, start_pos:end_pos] = k
        keys = self.k_cache[:, :end_pos]
        return torch.matmul(q, keys.transpose(-1, -2)), self.k_cache.shape
class Attn2(nn.Module):
    def forward(self, q, k, pos):
        self.v_cache[:, pos] = k
        return torch.matmul(q, self.v_cache.transpose(-1, -2))
class Attn3(nn.Module):
    def forward(self, q, k, pos):
        self.kv_cache.index_copy_(1, pos, k)
        return attend(q, self.kv_cache)
)"}});
  ModelConfig cfg;
  Inventory inv = build_inventory(s, cfg);
  std::vector<std::string> whole;
  for (const CacheAccess& a : inv.kv_cache.accesses)
    if (a.mechanism == "whole_read") whole.push_back(a.function + ":" + std::to_string(a.where.line));
  // Attn reads the buffer only through a slice and its shape (the read
  // before the write does not count); Attn2's `.transpose` and Attn3's
  // argument take it whole.
  EXPECT_EQ(whole, (std::vector<std::string>{"Attn2.forward:12", "Attn3.forward:16"})) << ::testing::PrintToString(whole);
}

TEST(KvCache, VllmIsPagedBySlotMapping) {
  auto m = load_model("vllm_style", false);
  EXPECT_EQ(m->inv.kv_cache.organisation, "paged");
  EXPECT_EQ(m->inv.kv_cache.write_index, "slot_mapping");
  EXPECT_EQ(count(m->inv.kv_cache, "slot_mapping"), 1);
}

TEST(KvCache, DeepSeekWritesSlicesAtStartPos) {
  auto m = load_model("deepseek_v3_like", false);
  EXPECT_EQ(m->inv.kv_cache.organisation, "contiguous");
  EXPECT_EQ(m->inv.kv_cache.write_index, "position");
  EXPECT_EQ(count(m->inv.kv_cache, "slice_write"), 4);  // naive k/v, absorb latent kv/pe
  for (const CacheAccess& a : m->inv.kv_cache.accesses) EXPECT_NE(a.write_index.find("start_pos:end_pos"), std::string::npos);
}

TEST(KvCache, GrowthByCatAndIndexCopy) {
  auto gptj = load_model("gptj_style", false);
  EXPECT_EQ(count(gptj->inv.kv_cache, "cat_growth"), 2);
  EXPECT_EQ(gptj->inv.kv_cache.write_index, "append");
  auto gemma = load_model("gemma_style", false);
  EXPECT_EQ(count(gemma->inv.kv_cache, "index_copy"), 2);
  EXPECT_EQ(gemma->inv.kv_cache.write_index, "position");
}

TEST(KvCache, FlagsAreNotCaches) {
  SourceSet s = SourceSet::from_texts({{"m.py", R"(import torch
from torch import nn
class A(nn.Module):
    def forward(self, x, use_cache, cache_position):
        y = torch.cat([x, cache_position], dim=0) if use_cache else x
        return y
)"}});
  ModelConfig cfg;
  Inventory inv = build_inventory(s, cfg);
  EXPECT_EQ(inv.kv_cache.organisation, "not found");
  EXPECT_TRUE(inv.kv_cache.accesses.empty());
}

}  // namespace
}  // namespace npufuse::model
