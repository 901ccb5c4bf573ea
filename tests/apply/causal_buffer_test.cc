// apply/causal_buffer.h: the prerequisite bool_buffer_is_causal is met where
// the code shows the buffer is the causal lower triangle read aligned to the
// last query, and stays a manual step, with what is not shown, otherwise.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <string>

#include "apply_test_support.h"

namespace npufuse::apply {
namespace {

using testing::patches_for_text;
using testing::replaced;
using testing::ScratchDir;

// GPT-2 style attention: the bool buffer selected with torch.where, then the scale.
const std::string kGpt2Style = R"(import math

import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, n_positions, dim, heads):
        super().__init__()
        self.register_buffer(
            "bias",
            torch.tril(torch.ones((n_positions, n_positions), dtype=torch.bool)).view(1, 1, n_positions, n_positions),
            persistent=False,
        )
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def _attn(self, query, key, value):
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]
        w = torch.matmul(query, key.transpose(-1, -2))
        w = w / math.sqrt(self.head_dim)
        w = torch.where(causal_mask, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
        w = nn.functional.softmax(w, dim=-1).to(value.dtype)
        return torch.matmul(w, value)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        return self._attn(q, k, v)
)";

std::string listing(const PatchSet& set) {
  std::string out;
  for (const std::string& a : set.applied) out += "applied: " + a + "\n";
  for (const ManualStep& m : set.checked) out += "checked: " + m.where + ": " + m.what + "\n";
  for (const ManualStep& m : set.manual) out += "manual: " + m.where + ": " + m.what + "\n";
  return out;
}

bool fia_applied(const PatchSet& set) {
  for (const std::string& a : set.applied)
    if (a.rfind("attention.fia_prefill_where_mask@", 0) == 0) return true;
  return false;
}

std::string manual_about_buffer(const PatchSet& set) {
  for (const ManualStep& m : set.manual)
    if (m.what.rfind("prerequisite bool_buffer_is_causal", 0) == 0) return m.what;
  return {};
}

TEST(CausalBuffer, ALowerTriangleReadAlignedToTheLastQueryIsShown) {
  ScratchDir dir("causal_buffer_met");
  PatchSet set = patches_for_text(dir, kGpt2Style);
  ASSERT_EQ(set.checked.size(), 1u) << listing(set);
  EXPECT_NE(set.checked[0].what.find("self.bias is the lower triangle"), std::string::npos) << set.checked[0].what;
  EXPECT_TRUE(fia_applied(set)) << listing(set);
  EXPECT_TRUE(manual_about_buffer(set).empty()) << listing(set);
}

// GPT-Neo's spelling: a uint8 triangle through a name, read with `.bool()`.
TEST(CausalBuffer, AUint8TriangleThroughANameReadAsBoolIsShown) {
  ScratchDir dir("causal_buffer_uint8");
  std::string text = replaced(kGpt2Style, R"(        self.register_buffer(
            "bias",
            torch.tril(torch.ones((n_positions, n_positions), dtype=torch.bool)).view(1, 1, n_positions, n_positions),
            persistent=False,
        )
)",
                              "        bias = torch.tril(torch.ones((n_positions, n_positions), dtype=torch.uint8)).view(\n"
                              "            1, 1, n_positions, n_positions\n"
                              "        )\n"
                              "        self.register_buffer(\"bias\", bias)\n");
  text = replaced(text, ":key_length]\n", ":key_length].bool()\n");
  PatchSet set = patches_for_text(dir, text);
  ASSERT_EQ(set.checked.size(), 1u) << listing(set);
  EXPECT_TRUE(fia_applied(set)) << listing(set);
  ScratchDir to_bool("causal_buffer_to_bool");
  PatchSet cast = patches_for_text(to_bool, replaced(text, ":key_length].bool()", ":key_length].to(torch.bool)"));
  EXPECT_EQ(cast.checked.size(), 1u) << listing(cast);
  // A local layer's band (`bias = bias ^ torch.tril(bias, -window)`) assigns the name twice: not shown.
  ScratchDir local("causal_buffer_local");
  PatchSet banded = patches_for_text(
      local, replaced(text, "        self.register_buffer(\"bias\", bias)\n",
                      "        bias = bias ^ torch.tril(bias, -4)\n        self.register_buffer(\"bias\", bias)\n"));
  EXPECT_TRUE(banded.checked.empty()) << listing(banded);
  EXPECT_FALSE(fia_applied(banded)) << listing(banded);
}

// GPT-2's select value, made in two statements between the chain's: both
// only prepare the select's operand, so both go with the chain.
TEST(CausalBuffer, StatementsPreparingTheSelectValueGoWithTheChain) {
  ScratchDir dir("causal_buffer_gpt2_mask_value");
  PatchSet set = patches_for_text(
      dir, replaced(kGpt2Style,
                    "        w = torch.where(causal_mask, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))\n",
                    "        mask_value = torch.finfo(w.dtype).min\n"
                    "        mask_value = torch.full([], mask_value, dtype=w.dtype, device=w.device)\n"
                    "        w = torch.where(causal_mask, w.to(w.dtype), mask_value)\n"));
  EXPECT_TRUE(fia_applied(set)) << listing(set);
  ASSERT_EQ(set.files.size(), 1u);
  EXPECT_EQ(set.files[0].patched.find("mask_value"), std::string::npos) << set.files[0].patched;
  // Read again after the chain, the value is no longer only the chain's: not rewritten.
  ScratchDir again("causal_buffer_mask_value_read_after");
  PatchSet kept = patches_for_text(
      again, replaced(replaced(kGpt2Style,
                               "        w = torch.where(causal_mask, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))\n",
                               "        mask_value = torch.finfo(w.dtype).min\n"
                               "        w = torch.where(causal_mask, w, torch.tensor(mask_value, dtype=w.dtype))\n"),
                      "        return torch.matmul(w, value)\n", "        return torch.matmul(w, value) * (mask_value < 0)\n"));
  EXPECT_FALSE(fia_applied(kept)) << listing(kept);
}

TEST(CausalBuffer, WhatTheCodeDoesNotShowStaysAManualStepWithTheReason) {
  struct Case {
    const char* what;
    std::string from, to, reason;
  };
  const Case cases[] = {
      {"a band, not the triangle", "torch.tril(torch.ones((n_positions, n_positions), dtype=torch.bool))",
       "torch.tril(torch.ones((n_positions, n_positions), dtype=torch.bool), diagonal=-1)", "is given diagonal=-1"},
      {"rows from the top (leftUp causal)", "self.bias[:, :, key_length - query_length : key_length, :key_length]",
       "self.bias[:, :, :query_length, :key_length]", "not self.<buffer>[:, :, K - Q : K, :K]"},
      {"written again", "        self.heads = heads\n",
       "        self.heads = heads\n        self.bias[:, :, :, :4] = False\n", "written again"},
      {"lengths swapped", "query_length, key_length = query.size(-2), key.size(-2)",
       "key_length, query_length = query.size(-2), key.size(-2)", "sequence length"},
      {"a float triangle", "dtype=torch.bool)).view", ")).view", "dtype=torch.bool"},
  };
  for (const Case& k : cases) {
    ScratchDir dir("causal_buffer_not_met");
    PatchSet set = patches_for_text(dir, replaced(kGpt2Style, k.from, k.to));
    std::string why = manual_about_buffer(set);
    EXPECT_NE(why.find(k.reason), std::string::npos) << k.what << "\n" << listing(set);
    EXPECT_TRUE(set.checked.empty()) << k.what << "\n" << listing(set);
    EXPECT_FALSE(fia_applied(set)) << k.what << "\n" << listing(set);
  }
}

}  // namespace
}  // namespace npufuse::apply
