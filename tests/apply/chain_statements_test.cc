// Which statements a chain rewrite takes in: an `if` holding an optional step
// of the chain, a statement between the chain's statements that only
// computes one of its inputs, and a kept statement binding a removed name
// again.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "apply/patch_plan.h"
#include "apply_test_support.h"

namespace npufuse::apply {
namespace {

using testing::ScratchDir;

// The attention class of `body` (its forward's statements after the score
// matmul), analysed and patched; `forward_args` are the parameters after
// query, key and value.
PatchSet patched(const ScratchDir& dir, const std::string& forward_args, const std::string& body) {
  return testing::patches_for_text(dir,
                                   "import torch\n"
                                   "import torch.nn.functional as F\n"
                                   "from torch import nn\n"
                                   "\n"
                                   "\n"
                                   "class Attention(nn.Module):\n"
                                   "    def __init__(self, head_dim):\n"
                                   "        super().__init__()\n"
                                   "        self.scaling = head_dim ** -0.5\n"
                                   "\n"
                                   "    def forward(self, query, key, value, " + forward_args + "):\n" +
                                   "        scores = torch.matmul(query, key.transpose(2, 3)) * self.scaling\n" + body);
}

// A copy of the built-in rules under dir/rules, with fia_decode's
// prerequisites dropped so that apply rewrites it (what the tests using it
// look at is how the chain's statements are taken); returns its path.
std::string rules_with_fia_decode_unguarded(const ScratchDir& dir) {
  std::filesystem::copy(testing::source_path("rules"), dir.file("rules"), std::filesystem::copy_options::recursive);
  std::string rule = read_file(dir.file("rules/attention/fia_decode.py"));
  const std::string list = "    \"prerequisites\": [";
  size_t from = rule.find(list);
  size_t to = from == std::string::npos ? from : rule.find("\n    ],\n", from);
  EXPECT_NE(to, std::string::npos) << "fia_decode's prerequisites list not found";
  if (to != std::string::npos) rule.replace(from, to + 7 - from, "    \"prerequisites\": [],\n");
  rule = testing::replaced(rule, "\"safety\": \"needs_prerequisites\"", "\"safety\": \"safe\"");
  write_file_atomic(dir.file("rules/attention/fia_decode.py"), rule);
  return dir.file("rules");
}

bool applied(const PatchSet& set, const std::string& rule) {
  return std::any_of(set.applied.begin(), set.applied.end(),
                     [&](const std::string& id) { return id.rfind(rule + "@", 0) == 0; });
}

std::string listed(const PatchSet& set) {
  std::string out = fmt::format("applied: {}\n", fmt::join(set.applied, ", "));
  for (const ManualStep& m : set.manual) out += m.candidate + ": " + m.what + "\n";
  return out;
}

TEST(ChainStatements, AnIfHoldingAnOptionalStepGoesWithTheChain) {
  ScratchDir dir("optional_if");
  PatchSet set = patched(dir, "attention_mask",
                         "        if attention_mask is not None:\n"
                         "            causal_mask = attention_mask[:, :, :, : key.shape[-2]]\n"
                         "            scores = scores + causal_mask\n"
                         "        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)\n"
                         "        return torch.matmul(probs, value).transpose(1, 2)\n");
  ASSERT_TRUE(applied(set, "attention.fia_prefill")) << listed(set);
  ASSERT_EQ(set.files.size(), 1u);
  const std::string& text = set.files[0].patched;
  // the whole if went: the replacement is the rule's with the mask add and without it
  EXPECT_EQ(text.find("if attention_mask is not None"), std::string::npos) << text;
  EXPECT_EQ(text.find("softmax"), std::string::npos) << text;
  EXPECT_NE(text.find("torch_npu.npu_fused_infer_attention_score("), std::string::npos) << text;
}

TEST(ChainStatements, AnIfWhoseOtherArmComputesSomethingElseStaysByHand) {
  ScratchDir dir("if_else");
  PatchSet set = patched(dir, "attention_mask",
                         "        if attention_mask is not None:\n"
                         "            scores = scores + attention_mask\n"
                         "        else:\n"
                         "            scores = scores * 0.5\n"
                         "        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)\n"
                         "        return torch.matmul(probs, value).transpose(1, 2)\n");
  EXPECT_FALSE(applied(set, "attention.fia_prefill")) << listed(set);
  for (const PatchedFile& f : set.files) EXPECT_NE(f.patched.find("else:"), std::string::npos) << f.patched;
}

// Attention whose causal mask is built only when `test` holds, the GQA
// repeat on (B, S, N, D) before the transposes (attention.fia_prefill_bsnd_repeat).
PatchSet masked_when(const ScratchDir& dir, const std::string& test) {
  return testing::patches_for_text(dir,
                                   "import math\n"
                                   "\n"
                                   "import torch\n"
                                   "from torch import nn\n"
                                   "\n"
                                   "\n"
                                   "class Attention(nn.Module):\n"
                                   "    def __init__(self, num_heads, num_kv_heads, head_dim):\n"
                                   "        super().__init__()\n"
                                   "        self.num_heads = num_heads\n"
                                   "        self.num_kv_heads = num_kv_heads\n"
                                   "        self.head_dim = head_dim\n"
                                   "\n"
                                   "    def forward(self, q, k, v):\n"
                                   "        bsz, q_len = q.shape[0], q.shape[1]\n"
                                   "        n_rep = self.num_heads // self.num_kv_heads\n"
                                   "        k_full = torch.repeat_interleave(k, repeats=n_rep, dim=2)\n"
                                   "        v_full = torch.repeat_interleave(v, repeats=n_rep, dim=2)\n"
                                   "        q = q.transpose(1, 2)\n"
                                   "        k_full = k_full.transpose(1, 2)\n"
                                   "        v_full = v_full.transpose(1, 2)\n"
                                   "        scores = q @ k_full.transpose(-2, -1) * (1.0 / math.sqrt(self.head_dim))\n"
                                   "        if " + test + ":\n"
                                   "            kv_len = k_full.shape[-2]\n"
                                   "            future = torch.ones(q_len, kv_len, dtype=torch.bool).triu(kv_len - q_len + 1)\n"
                                   "            scores = scores.masked_fill(future, float(\"-inf\"))\n"
                                   "        # normalise\n"
                                   "        probs = scores.softmax(dim=-1)\n"
                                   "        return (probs @ v_full).transpose(1, 2).reshape(bsz, q_len, -1)\n");
}

TEST(ChainStatements, AnIfTheChainRunsThroughIsSplitOnItsTest) {
  ScratchDir dir("branch_split");
  PatchSet set = masked_when(dir, "q_len > 1");
  ASSERT_TRUE(applied(set, "attention.fia_prefill_bsnd_repeat")) << listed(set);
  const std::string& text = set.files[0].patched;
  size_t test = text.find("        if q_len > 1:\n            npu_result = torch_npu.npu_fused_infer_attention_score(");
  size_t other = text.find("        else:\n            k_full = torch.repeat_interleave(k, repeats=n_rep, dim=2)\n");
  ASSERT_NE(test, std::string::npos) << text;
  ASSERT_NE(other, std::string::npos) << text;
  EXPECT_LT(test, other);
  // the replacement's arm returns the fused result; the other keeps the
  // chain's statements without the if, its comments with them
  EXPECT_NE(text.find("            return npu_result.reshape(bsz, q_len, -1)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("            # normalise\n            probs = scores.softmax(dim=-1)\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("masked_fill"), std::string::npos) << text;
  EXPECT_EQ(text.find("if q_len > 1:"), text.rfind("if q_len > 1:")) << text;
  EXPECT_NE(text.find("# branch split: `if q_len > 1`"), std::string::npos) << text;
  ASSERT_EQ(set.refactored.size(), 1u);
  EXPECT_NE(set.refactored[0].what.find("branch `if q_len > 1` split"), std::string::npos) << set.refactored[0].what;
}

TEST(ChainStatements, ASplitWhoseTestReadsTheChainsOwnNameIsRefused) {
  ScratchDir dir("branch_split_reads_chain");
  // the test would run before `scores` is computed
  PatchSet set = masked_when(dir, "scores.shape[-2] > 1");
  EXPECT_FALSE(applied(set, "attention.fia_prefill_bsnd_repeat")) << listed(set);
  EXPECT_NE(listed(set).find("reads 'scores', which the chain's statements before it assign"), std::string::npos)
      << listed(set);
}

TEST(ChainStatements, ANameTheIfBindsForTheStepIsNotReadAfterIt) {
  ScratchDir dir("optional_if_name_read");
  PatchSet set = patched(dir, "attention_mask",
                         "        if attention_mask is not None:\n"
                         "            causal_mask = attention_mask[:, :, :, : key.shape[-2]]\n"
                         "            scores = scores + causal_mask\n"
                         "        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)\n"
                         "        out = torch.matmul(probs, value).transpose(1, 2)\n"
                         "        self.last_mask = causal_mask\n"
                         "        return out\n");
  EXPECT_FALSE(applied(set, "attention.fia_prefill")) << listed(set);
  EXPECT_NE(listed(set).find("the intermediate 'causal_mask' is read again"), std::string::npos) << listed(set);
}

TEST(ChainStatements, AStatementComputingALaterInputMovesBeforeTheReplacement) {
  ScratchDir dir("hoisted_input");
  // `bias` sits between the chain's statements and is read by its mask add.
  PatchSet set = patched(dir, "positions",
                         "        bias = torch.zeros(positions.shape[0], positions.shape[0]).triu(1) * -1e9\n"
                         "        scores = scores + bias\n"
                         "        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)\n"
                         "        return torch.matmul(probs, value).transpose(1, 2)\n");
  ASSERT_TRUE(applied(set, "attention.fia_prefill")) << listed(set);
  const std::string& text = set.files[0].patched;
  size_t bias = text.find("bias = torch.zeros");
  size_t fused = text.find("npu_fused_infer_attention_score(");
  ASSERT_NE(bias, std::string::npos) << text;
  EXPECT_LT(bias, fused) << text;
  EXPECT_EQ(text.find("scores"), std::string::npos) << text;
}

TEST(ChainStatements, AKeptStatementBindingTheResultsNameAgainMayBeReadAfter) {
  ScratchDir dir("kept_rebinding");
  // HF's closing lines: the result is the transpose inside a kept statement
  // that binds `attn_output` again; the return reads that binding.
  PatchSet set = patched(dir, "attention_mask",
                         "        scores = scores + attention_mask\n"
                         "        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)\n"
                         "        attn_output = torch.matmul(probs, value)\n"
                         "        attn_output = attn_output.transpose(1, 2).contiguous()\n"
                         "        return attn_output\n");
  ASSERT_TRUE(applied(set, "attention.fia_prefill")) << listed(set);
  const std::string& text = set.files[0].patched;
  EXPECT_NE(text.find(".contiguous()\n        return attn_output\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("torch.matmul(probs"), std::string::npos) << text;
}

TEST(ChainStatements, AModuleLevelAttentionTakesItsHelpersCallsAndReturnsNoneForDroppedWeights) {
  ScratchDir dir("module_level");
  PatchSet set = testing::patches_for_text(
      dir,
      "import torch\n"
      "import torch.nn.functional as F\n"
      "from torch import nn\n"
      "\n"
      "\n"
      "def repeat_kv(x, n_rep):\n"
      "    if n_rep == 1:\n"
      "        return x\n"
      "    b, h, s, d = x.shape\n"
      "    return x[:, :, None].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)\n"
      "\n"
      "\n"
      "def attend(module, query, key_cache, value_cache, kv_len):\n"
      "    keys = repeat_kv(key_cache, module.n_rep)\n"
      "    values = repeat_kv(value_cache, module.n_rep)\n"
      "    scores = torch.matmul(query, keys.transpose(2, 3)) * module.scaling\n"
      "    positions = torch.arange(key_cache.shape[2])\n"
      "    invalid = (positions[None, :] >= kv_len[:, None])[:, None, None, :]\n"
      "    scores = scores.masked_fill(invalid, torch.finfo(scores.dtype).min)\n"
      "    probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)\n"
      "    out = torch.matmul(probs, values)\n"
      "    return out, probs\n"
      "\n"
      "\n"
      "class Attention(nn.Module):\n"
      "    def __init__(self, n_rep, head_dim):\n"
      "        super().__init__()\n"
      "        self.n_rep = n_rep\n"
      "        self.scaling = head_dim ** -0.5\n"
      "\n"
      "    def forward(self, query, key_cache, value_cache, kv_len):\n"
      "        out, _ = attend(self, query, key_cache, value_cache, kv_len)\n"
      "        return out\n",
      rules_with_fia_decode_unguarded(dir));
  ASSERT_TRUE(applied(set, "attention.fia_decode")) << listed(set);
  const std::string& text = set.files[0].patched;
  // the repeat_kv calls went with the chain (their early return is a merge it passes)
  EXPECT_EQ(text.find("keys = repeat_kv"), std::string::npos) << text;
  // self.scaling in the caller is module.scaling here
  EXPECT_NE(text.find("scale=module.scaling"), std::string::npos) << text;
  // the weights are fused away and every caller drops them
  EXPECT_NE(text.find("    return out, None\n"), std::string::npos) << text;
}

TEST(ChainStatements, AViewTheCallerAppliesBeforeTheHelperStaysWhereItIs) {
  ScratchDir dir("caller_view");
  // The chain is matched in the attention forward with the rotary helper
  // inlined, and takes over `k_rot.view(...)`, which lies in the forward; the
  // rewrite goes into the helper, which the forward's view statement is not
  // part of: the view stays and the helper's `k` is bound.
  PatchSet set = testing::patches_for_text(
      dir,
      "import torch\n"
      "from torch import nn\n"
      "\n"
      "\n"
      "def rotate_half(x):\n"
      "    x1 = x[..., : x.shape[-1] // 2]\n"
      "    x2 = x[..., x.shape[-1] // 2 :]\n"
      "    return torch.cat((-x2, x1), dim=-1)\n"
      "\n"
      "\n"
      "def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):\n"
      "    cos = cos.unsqueeze(unsqueeze_dim)\n"
      "    sin = sin.unsqueeze(unsqueeze_dim)\n"
      "    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)\n"
      "\n"
      "\n"
      "class Attention(nn.Module):\n"
      "    def __init__(self, hidden, heads, rope_dim):\n"
      "        super().__init__()\n"
      "        self.heads, self.rope_dim = heads, rope_dim\n"
      "        self.q_proj = nn.Linear(hidden, heads * rope_dim, bias=False)\n"
      "        self.k_proj = nn.Linear(hidden, rope_dim, bias=False)\n"
      "\n"
      "    def forward(self, hidden_states, position_embeddings):\n"
      "        b, s, _ = hidden_states.shape\n"
      "        q_rot = self.q_proj(hidden_states).view(b, s, self.heads, self.rope_dim).transpose(1, 2)\n"
      "        k_rot = self.k_proj(hidden_states)\n"
      "        k_rot = k_rot.view(b, 1, s, self.rope_dim)\n"
      "        cos, sin = position_embeddings\n"
      "        q_rot, k_rot = apply_rotary_pos_emb(q_rot, k_rot, cos, sin)\n"
      "        return q_rot, k_rot\n");
  ASSERT_TRUE(std::any_of(set.applied.begin(), set.applied.end(),
                          [](const std::string& id) { return id.rfind("rope.rope_half", 0) == 0; }))
      << listed(set);
  const std::string& text = set.files[0].patched;
  EXPECT_NE(text.find("        k_rot = k_rot.view(b, 1, s, self.rope_dim)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("torch_npu.npu_"), text.rfind("def rotate_half")) << text;
  EXPECT_EQ(text.find("(k * cos) + (rotate_half(k) * sin)"), std::string::npos) << text;
}

// HF's shape: a module-level eager attention handed its module by the
// attention class (through a name bound to it); the class holds the mask.
std::string hf_attention(const std::string& extra_class) {
  return "import torch\n"
         "import torch.nn.functional as F\n"
         "from torch import nn\n"
         "from typing import Callable\n"
         "\n"
         "\n"
         "def eager_attention_forward(module, query, key, value, attention_mask, scaling):\n"
         "    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling\n"
         "    if attention_mask is not None:\n"
         "        attn_weights = attn_weights + attention_mask\n"
         "    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)\n"
         "    attn_output = torch.matmul(attn_weights, value)\n"
         "    return attn_output.transpose(1, 2).contiguous()\n"
         "\n"
         "\n"
         "class Attention(nn.Module):\n"
         "    def __init__(self, head_dim):\n"
         "        super().__init__()\n"
         "        self.scaling = head_dim ** -0.5\n"
         "\n"
         "    def forward(self, query, key, value, attention_mask):\n"
         "        attention_interface: Callable = eager_attention_forward\n"
         "        attn_output = attention_interface(self, query, key, value, attention_mask, self.scaling)\n"
         "        return attn_output\n" +
         extra_class;
}

TEST(ChainStatements, TheClassHandingAModuleLevelAttentionItselfHoldsItsMask) {
  ScratchDir dir("module_holder");
  PatchSet set = testing::patches_for_text(dir, hf_attention(""));
  ASSERT_TRUE(applied(set, "attention.fia_prefill")) << listed(set);
  const std::string& text = set.files[0].patched;
  EXPECT_NE(text.find("        self.scaling = head_dim ** -0.5\n"
                      "        self.register_buffer(\"causal_mask_2048\", torch.triu("),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("atten_mask=module.causal_mask_2048"), std::string::npos) << text;
}

// No one class to hold the mask: a module-level getter builds it once per
// device, before the file's first top-level definition.
TEST(ChainStatements, AModuleLevelAttentionTwoClassesHandThemselvesReadsItsMaskFromAGetter) {
  ScratchDir dir("module_holders");
  PatchSet set = testing::patches_for_text(dir, hf_attention("\n"
                                                "\n"
                                                "class CrossAttention(nn.Module):\n"
                                                "    def __init__(self, head_dim):\n"
                                                "        super().__init__()\n"
                                                "        self.scaling = head_dim ** -0.5\n"
                                                "\n"
                                                "    def forward(self, query, key, value):\n"
                                                "        out = eager_attention_forward(self, query, key, value, None, self.scaling)\n"
                                                "        return out\n"));
  ASSERT_TRUE(applied(set, "attention.fia_prefill")) << listed(set);
  const std::string& text = set.files.front().patched;
  EXPECT_NE(text.find("_npu_causal_mask_2048 = {}\n\n\n"
                      "def npu_causal_mask_2048(device):\n"
                      "    # causal_mask_2048, built once per device (the replacement's constant).\n"
                      "    if device not in _npu_causal_mask_2048:\n"),
            std::string::npos)
      << text;
  EXPECT_LT(text.find("def npu_causal_mask_2048(device):"), text.find("def eager_attention_forward"));
  EXPECT_NE(text.find("atten_mask=npu_causal_mask_2048(query.device)"), std::string::npos) << text;
  EXPECT_EQ(text.find("register_buffer(\"causal_mask_2048\""), std::string::npos);
}

// Used otherwise than called and unpacked with `_` (a registry), the function
// keeps returning the weights: the analysis asks to keep them, and apply's
// own check of the function's uses would refuse too.
TEST(ChainStatements, DroppedWeightsStayWhenTheFunctionIsUsedOtherwise) {
  ScratchDir dir("module_level_kept");
  PatchSet set = testing::patches_for_text(
      dir,
      "import torch\n"
      "import torch.nn.functional as F\n"
      "from torch import nn\n"
      "\n"
      "\n"
      "def attend(module, query, key_cache, value_cache, kv_len):\n"
      "    scores = torch.matmul(query, key_cache.transpose(2, 3)) * module.scaling\n"
      "    positions = torch.arange(key_cache.shape[2])\n"
      "    invalid = (positions[None, :] >= kv_len[:, None])[:, None, None, :]\n"
      "    scores = scores.masked_fill(invalid, torch.finfo(scores.dtype).min)\n"
      "    probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)\n"
      "    out = torch.matmul(probs, value_cache)\n"
      "    return out, probs\n"
      "\n"
      "\n"
      "class Attention(nn.Module):\n"
      "    def __init__(self, head_dim):\n"
      "        super().__init__()\n"
      "        self.scaling = head_dim ** -0.5\n"
      "\n"
      "    def forward(self, query, key_cache, value_cache, kv_len):\n"
      "        out, _ = attend(self, query, key_cache, value_cache, kv_len)\n"
      "        return out\n"
      "\n"
      "\n"
      "\n"
      "# a registry others may call through, keeping both results\n"
      "IMPLEMENTATIONS = {\"eager\": attend}\n",
      rules_with_fia_decode_unguarded(dir));
  EXPECT_FALSE(applied(set, "attention.fia_decode")) << listed(set);
  for (const PatchedFile& f : set.files) EXPECT_NE(f.patched.find("    return out, probs\n"), std::string::npos);
}

// HF's current shape: the eager function returns its weights, the attention
// returns them on, and the decoder layer unpacks them into `_` (or, in the
// second text, reads them). `layer_tail` ends the layer's forward;
// `dispatch` picks the function the attention calls.
std::string hf_weights_through_two_levels(const std::string& layer_tail,
                                          const std::string& dispatch = "        attend = eager_attention_forward\n") {
  return "import torch\n"
         "import torch.nn.functional as F\n"
         "from torch import nn\n"
         "\n"
         "from .backends import BACKENDS\n"
         "\n"
         "\n"
         "def eager_attention_forward(module, query, key, value, attention_mask, scaling):\n"
         "    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling\n"
         "    if attention_mask is not None:\n"
         "        attn_weights = attn_weights + attention_mask[:, :, :, : key.shape[-2]]\n"
         "    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)\n"
         "    attn_output = torch.matmul(attn_weights, value)\n"
         "    return attn_output.transpose(1, 2).contiguous(), attn_weights\n"
         "\n"
         "\n"
         "ATTENTION_FUNCTIONS = {\"eager\": eager_attention_forward}\n"
         "\n"
         "\n"
         "class Attention(nn.Module):\n"
         "    def __init__(self, head_dim, impl):\n"
         "        super().__init__()\n"
         "        self.scaling = head_dim ** -0.5\n"
         "        self.impl = impl\n"
         "\n"
         "    def forward(self, query, key, value, attention_mask):\n" +
         dispatch +
         "        attn_output, attn_weights = attend(self, query, key, value, attention_mask, scaling=self.scaling)\n"
         "        return attn_output, attn_weights\n"
         "\n"
         "\n"
         "class DecoderLayer(nn.Module):\n"
         "    def __init__(self, head_dim):\n"
         "        super().__init__()\n"
         "        self.self_attn = Attention(head_dim, \"eager\")\n"
         "\n"
         "    def forward(self, query, key, value, attention_mask):\n" +
         layer_tail;
}

TEST(ChainStatements, WeightsTheLayerDropsTwoCallsUpAreReturnedAsNone) {
  ScratchDir dir("two_levels");
  PatchSet set = testing::patches_for_text(dir, hf_weights_through_two_levels(
                                                    "        out, _ = self.self_attn(query, key, value, attention_mask)\n"
                                                    "        return out\n"));
  ASSERT_TRUE(applied(set, "attention.fia_prefill")) << listed(set);
  const std::string& text = set.files[0].patched;
  // Called through a name bound to it: the call's arguments name the bindings.
  EXPECT_NE(text.find("torch_npu.npu_fused_infer_attention_score(\n        query, key, value,"), std::string::npos) << text;
  EXPECT_NE(text.find(".contiguous(), None\n"), std::string::npos) << text;
  // The mask the replacement does not read needs no spelling.
  EXPECT_EQ(text.find("attention_mask[:, :, :, : key.shape[-2]]"), std::string::npos) << text;
}

// HF's dispatch: the eager function unless the config names a backend, whose
// function is not in the analysed files. The weights still reach the layer's
// `_` only: the element keeps its position through the merge of the two
// results.
TEST(ChainStatements, WeightsDroppedAfterABackendDispatchAreReturnedAsNone) {
  ScratchDir dir("two_levels_dispatch");
  PatchSet set = testing::patches_for_text(
      dir, hf_weights_through_two_levels("        out, _ = self.self_attn(query, key, value, attention_mask)\n"
                                         "        return out\n",
                                         "        attend = eager_attention_forward\n"
                                         "        if self.impl != \"eager\":\n"
                                         "            attend = BACKENDS[self.impl]\n"));
  ASSERT_TRUE(applied(set, "attention.fia_prefill")) << listed(set);
  EXPECT_EQ(listed(set).find("keep_intermediate"), std::string::npos) << listed(set);
  EXPECT_NE(set.files[0].patched.find(".contiguous(), None\n"), std::string::npos) << set.files[0].patched;
  // The backend picked at run time is not patched: apply says where it takes over.
  std::string said;
  for (const ManualStep& m : set.assumed) said += m.what + "\n";
  EXPECT_NE(said.find("the fused call is in eager_attention_forward, which Attention.forward calls through `attend`; "
                      "where `self.impl != \"eager\"` holds, `attend` = `BACKENDS[self.impl]` runs instead"),
            std::string::npos)
      << said;
}

TEST(ChainStatements, WeightsTheLayerReadsKeepTheChainByHand) {
  ScratchDir dir("two_levels_read");
  PatchSet set = testing::patches_for_text(dir, hf_weights_through_two_levels(
                                                    "        out, weights = self.self_attn(query, key, value, attention_mask)\n"
                                                    "        return out * weights.mean()\n"));
  EXPECT_FALSE(applied(set, "attention.fia_prefill")) << listed(set);
  EXPECT_NE(listed(set).find("keep_intermediate"), std::string::npos) << listed(set);
}

// DeepSeek-V3's interleaved RoPE helper reads each tensor's shape into the
// same names before de-interleaving it: `b, h, s, d = k.shape` between the
// query's view and the key's prepares only the key's view, so it goes with
// the chain, and nothing after the chain reads those names.
TEST(ChainStatements, ShapeNamesUnpackedForTheChainGoWithIt) {
  ScratchDir dir("unpacked_prep");
  PatchSet set = testing::patches_for_text(dir,
                                           "import torch\n"
                                           "\n"
                                           "\n"
                                           "def swap_halves(x):\n"
                                           "    first = x[..., : x.shape[-1] // 2]\n"
                                           "    second = x[..., x.shape[-1] // 2 :]\n"
                                           "    return torch.cat((-second, first), dim=-1)\n"
                                           "\n"
                                           "\n"
                                           "def rope_pairs(q, k, cos, sin):\n"
                                           "    cos = cos.unsqueeze(1)\n"
                                           "    sin = sin.unsqueeze(1)\n"
                                           "    b, h, s, d = q.shape\n"
                                           "    q = q.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)\n"
                                           "    b, h, s, d = k.shape\n"
                                           "    k = k.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)\n"
                                           "    q_out = (q * cos) + (swap_halves(q) * sin)\n"
                                           "    k_out = (k * cos) + (swap_halves(k) * sin)\n"
                                           "    return q_out, k_out\n"
                                           "\n"
                                           "\n"
                                           "class Attention(torch.nn.Module):\n"
                                           "    def forward(self, q_rot, k_rot, cos, sin):\n"
                                           "        q_rot, k_rot = rope_pairs(q_rot, k_rot, cos, sin)\n"
                                           "        return q_rot * 2, k_rot * 2\n");
  ASSERT_TRUE(applied(set, "rope.rope_deinterleave_half")) << listed(set);
  const std::string& patched = set.files[0].patched;
  EXPECT_NE(patched.find("npu_interleave_rope(q, cos, sin), torch_npu.npu_interleave_rope(k, cos, sin)"),
            std::string::npos) << patched;
  EXPECT_EQ(patched.find("k.shape"), std::string::npos) << patched;
  EXPECT_NE(patched.find("    b, h, s, d = q.shape\n"), std::string::npos) << patched;  // before the chain: stays
}

}  // namespace
}  // namespace npufuse::apply
