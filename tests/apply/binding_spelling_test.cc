// How a replacement spells the values its chain was bound to: a name only
// where it still holds the value, else the expression that computed it when
// the rewrite removes that expression, else a manual step saying why.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "apply/patch_plan.h"
#include "apply_test_support.h"
#include "plan/analyze.h"
#include "report/plan_json.h"

namespace npufuse::apply {
namespace {

using testing::ScratchDir;

// Writes `model` as dir/model.py with a small config, analyses it, and
// makes every patch the plan allows.
PatchSet patches_of(const ScratchDir& dir, const std::string& model,
                    const std::string& config = R"({"hidden_size": 64, "num_attention_heads": 2, "head_dim": 32, "torch_dtype": "bfloat16"})") {
  write_file_atomic(dir.file("model.py"), model);
  write_file_atomic(dir.file("config.json"), config);
  plan::AnalyzeOptions o;
  o.paths = {dir.file("model.py")};
  o.config = dir.file("config.json");
  write_file_atomic(dir.file("plan.json"), report::plan_to_json(plan::analyze(o)).dump(2));
  return make_patches(PatchRequest{dir.file("plan.json"), {}, {}});
}

std::string listed(const PatchSet& set) {
  std::string out = fmt::format("applied: {}\n", fmt::join(set.applied, ", "));
  for (const ManualStep& m : set.manual) out += fmt::format("manual {}: {}: {}\n", m.candidate, m.where, m.what);
  return out;
}

bool applied_at(const PatchSet& set, const std::string& rule, int line) {
  std::string suffix = fmt::format(":{}", line);
  return std::any_of(set.applied.begin(), set.applied.end(), [&](const std::string& id) {
    return id.rfind(rule + "@", 0) == 0 && id.size() >= suffix.size() &&
           id.compare(id.size() - suffix.size(), suffix.size(), suffix) == 0;
  });
}

constexpr const char* kNorm =
    "import torch\n"
    "import torch.nn as nn\n"
    "\n"
    "\n"
    "class RMSNorm(nn.Module):\n"
    "    def __init__(self, dim, eps=1e-6):\n"
    "        super().__init__()\n"
    "        self.eps = eps\n"
    "        self.weight = nn.Parameter(torch.ones(dim))\n"
    "\n"
    "    def forward(self, hidden_states):\n"
    "        x32 = hidden_states.to(torch.float32)\n"
    "        inv_rms = torch.rsqrt(x32.square().mean(-1, keepdim=True) + self.eps)\n"
    "        return self.weight * (x32 * inv_rms).to(hidden_states.dtype)\n";

// The head norms read views the attention forward passes them; inside the
// norm those views are called `hidden_states`, which in the attention forward
// names its own input. The replacement must read the views.
TEST(BindingSpelling, ViewPassedToAnInlinedNormIsMovedIntoTheReplacement) {
  ScratchDir dir("spell_view");
  std::string model = std::string(kNorm) +
                      "\n\n"
                      "class Attention(nn.Module):\n"
                      "    def __init__(self, hidden, heads, head_dim):\n"
                      "        super().__init__()\n"
                      "        self.heads = heads\n"
                      "        self.head_dim = head_dim\n"
                      "        self.q_proj = nn.Linear(hidden, heads * head_dim, bias=False)\n"
                      "        self.k_proj = nn.Linear(hidden, heads * head_dim, bias=False)\n"
                      "        self.q_norm = RMSNorm(head_dim)\n"
                      "        self.k_norm = RMSNorm(head_dim)\n"
                      "\n"
                      "    def forward(self, hidden_states):\n"
                      "        b, s, _ = hidden_states.shape\n"
                      "        q = self.q_norm(self.q_proj(hidden_states).view(b, s, self.heads, self.head_dim))\n"
                      "        k = self.k_norm(self.k_proj(hidden_states).view(b, s, self.heads, self.head_dim))\n"
                      "        return q * k\n";
  PatchSet set = patches_of(dir, model);
  ASSERT_TRUE(applied_at(set, "norm.qk_norm", 29)) << listed(set);
  const std::string& patched = set.files.at(0).patched;
  EXPECT_NE(patched.find("npu_rms_norm(self.q_proj(hidden_states).view(b, s, self.heads, self.head_dim), self.q_norm.weight"),
            std::string::npos)
      << patched;
  EXPECT_NE(patched.find("npu_rms_norm(self.k_proj(hidden_states).view(b, s, self.heads, self.head_dim), self.k_norm.weight"),
            std::string::npos)
      << patched;
  EXPECT_EQ(patched.find("npu_rms_norm(hidden_states, self.q_norm.weight"), std::string::npos) << patched;
  // The projections are computed once: only inside the replacement.
  EXPECT_EQ(patched.find("self.q_proj("), patched.rfind("self.q_proj(")) << patched;
}

// The attention forward returns `(self.o_proj(x), None)`; the layer unpacks
// it as `attn_out, _ = ...` and adds it to the residual before the norm. The
// value is unnamed where it is made, so add_rms_norm spells the name the
// tuple assignment gave it (it used to be refused as an unnamed linear(...)).
TEST(BindingSpelling, NameATupleAssignmentGaveTheValueIsUsed) {
  const std::string model =
      std::string(kNorm) +
      "\n\n"
      "class Attention(nn.Module):\n"
      "    def __init__(self, hidden):\n"
      "        super().__init__()\n"
      "        self.o_proj = nn.Linear(hidden, hidden, bias=False)\n"
      "\n"
      "    def forward(self, x):\n"
      "        return self.o_proj(x * 2.0), None\n"
      "\n"
      "\n"
      "class Layer(nn.Module):\n"
      "    def __init__(self, hidden):\n"
      "        super().__init__()\n"
      "        self.attn = Attention(hidden)\n"
      "        self.norm = RMSNorm(hidden)\n"
      "\n"
      "    def forward(self, hidden_states):\n"
      "        attn_out, _ = self.attn(hidden_states)\n"
      "        summed = hidden_states + attn_out\n"
      "        normed = self.norm(summed)\n"
      "        return normed, summed\n";
  ScratchDir dir("spell_unpacked");
  PatchSet set = patches_of(dir, model);
  ASSERT_TRUE(applied_at(set, "norm.add_rms_norm", 34)) << listed(set);
  const std::string& patched = set.files.at(0).patched;
  EXPECT_NE(patched.find("torch_npu.npu_add_rms_norm(hidden_states, attn_out, self.norm.weight"), std::string::npos)
      << patched;
}

// The layer calls one norm class twice (HF's input and post-attention
// norms). The add_rms_norm chain's normed result is the call after the add,
// not the input norm before it: the rewrite must find that call site. The
// residual is the layer's input, whose first name `hidden_states` is
// reassigned before the add; `residual = hidden_states` still holds it and is
// the spelling used.
TEST(BindingSpelling, NormClassCalledTwiceTheCallAfterTheAddIsTheResult) {
  const std::string model =
      std::string(kNorm) +
      "\n\n"
      "class Layer(nn.Module):\n"
      "    def __init__(self, hidden):\n"
      "        super().__init__()\n"
      "        self.proj = nn.Linear(hidden, hidden, bias=False)\n"
      "        self.input_norm = RMSNorm(hidden)\n"
      "        self.post_norm = RMSNorm(hidden)\n"
      "\n"
      "    def forward(self, hidden_states):\n"
      "        residual = hidden_states\n"
      "        hidden_states = self.input_norm(hidden_states)\n"
      "        hidden_states = self.proj(hidden_states)\n"
      "        summed = residual + hidden_states\n"
      "        hidden_states = self.post_norm(summed)\n"
      "        return hidden_states, summed\n";
  ScratchDir dir("spell_two_norm_calls");
  PatchSet set = patches_of(dir, model);
  ASSERT_TRUE(applied_at(set, "norm.add_rms_norm", 28)) << listed(set);
  const std::string& patched = set.files.at(0).patched;
  EXPECT_NE(patched.find("torch_npu.npu_add_rms_norm(residual, hidden_states, self.post_norm.weight"), std::string::npos)
      << patched;
  EXPECT_NE(patched.find("self.input_norm(hidden_states)"), std::string::npos) << patched;  // the input norm stays
}

// HF's decoder layer: the attention output comes back through a tuple, and
// `residual = hidden_states` sits between the residual add and the norm. The
// copy stays where it was, after the sum is bound and before the norm's
// result is, so it still copies the sum.
TEST(BindingSpelling, CopyBetweenTheAddAndTheNormStaysBetweenTheirBindings) {
  const std::string model =
      std::string(kNorm) +
      "\n\n"
      "class Attention(nn.Module):\n"
      "    def __init__(self, hidden):\n"
      "        super().__init__()\n"
      "        self.o_proj = nn.Linear(hidden, hidden, bias=False)\n"
      "\n"
      "    def forward(self, x):\n"
      "        attn_output = self.o_proj(x * 2.0)\n"
      "        return attn_output, None\n"
      "\n"
      "\n"
      "class Layer(nn.Module):\n"
      "    def __init__(self, hidden):\n"
      "        super().__init__()\n"
      "        self.self_attn = Attention(hidden)\n"
      "        self.input_layernorm = RMSNorm(hidden)\n"
      "        self.post_attention_layernorm = RMSNorm(hidden)\n"
      "\n"
      "    def forward(self, hidden_states):\n"
      "        residual = hidden_states\n"
      "        hidden_states = self.input_layernorm(hidden_states)\n"
      "        hidden_states, _ = self.self_attn(hidden_states)\n"
      "        hidden_states = residual + hidden_states\n"
      "\n"
      "        residual = hidden_states\n"
      "        hidden_states = self.post_attention_layernorm(hidden_states)\n"
      "        return hidden_states * 3.0 + residual\n";
  ScratchDir dir("spell_copy_between");
  PatchSet set = patches_of(dir, model);
  ASSERT_TRUE(applied_at(set, "norm.add_rms_norm", 38)) << listed(set);
  const std::string& patched = set.files.at(0).patched;
  const std::string expected =
      "        normed, __npu, residual_npu = torch_npu.npu_add_rms_norm(residual, hidden_states, "
      "self.post_attention_layernorm.weight, self.post_attention_layernorm.eps)\n"
      "        npu_result, npu_result2 = normed, residual_npu\n"
      "        hidden_states = npu_result2\n"
      "        residual = hidden_states\n"
      "        hidden_states = npu_result\n"
      "        return hidden_states * 3.0 + residual\n";
  EXPECT_NE(patched.find(expected), std::string::npos) << patched;
}

// `x` named the value the norm reads until `x = other`; the norm reads it
// through `z = y` after `y = x`, and `y` is reassigned too. One alias
// (`y = x`, still holding the value) would be used; an alias of an alias
// is not followed. The expression stays where it is, so there is no spelling.
TEST(BindingSpelling, NameReboundBeforeTheChainIsRefusedWithTheReason) {
  ScratchDir dir("spell_rebound");
  std::string model =
      "import torch\n"
      "\n"
      "\n"
      "def aliased_norm(h, weight, other):\n"
      "    x = h * 2.0\n"
      "    y = x\n"
      "    x = other\n"
      "    z = y\n"
      "    y = other\n"
      "    z32 = z.to(torch.float32)\n"
      "    z32 = z32 * torch.rsqrt(z32.pow(2).mean(-1, keepdim=True) + 1e-6)\n"
      "    return weight * z32.to(z.dtype)\n"
      "\n"
      "\n"
      "def plain_norm(h, weight):\n"
      "    x = h * 2.0\n"
      "    x32 = x.to(torch.float32)\n"
      "    x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-6)\n"
      "    return weight * x32.to(x.dtype)\n";
  PatchSet set = patches_of(dir, model);
  auto refused = std::find_if(set.manual.begin(), set.manual.end(),
                              [](const ManualStep& m) { return m.candidate.rfind("norm.rms_norm@", 0) == 0; });
  ASSERT_NE(refused, set.manual.end()) << listed(set);
  EXPECT_NE(refused->what.find("'x' does not hold that value"), std::string::npos) << refused->what;
  EXPECT_NE(refused->what.find("model.py:5"), std::string::npos) << refused->what;
  EXPECT_FALSE(applied_at(set, "norm.rms_norm", 10)) << listed(set);
  // The same chain where `x` still holds the value reads `x`.
  ASSERT_TRUE(applied_at(set, "norm.rms_norm", 17)) << listed(set);
  EXPECT_NE(set.files.at(0).patched.find("npu_rms_norm(x, weight, epsilon=1e-6)"), std::string::npos)
      << set.files.at(0).patched;
}

// After `if residual is not None: x = x + ...` the norm reads the merge of
// both arms; `x` names that merge where the replacement goes, so it is used.
TEST(BindingSpelling, NameOfTheMergeAfterAnIfIsUsed) {
  ScratchDir dir("spell_merge");
  std::string model =
      "import torch\n"
      "\n"
      "\n"
      "def merged_norm(x, residual, weight):\n"
      "    orig_dtype = x.dtype\n"
      "    x = x.to(torch.float32)\n"
      "    if residual is not None:\n"
      "        x = x + residual.to(torch.float32)\n"
      "    variance = x.pow(2).mean(dim=-1, keepdim=True)\n"
      "    x = x * torch.rsqrt(variance + 1e-6)\n"
      "    return x.to(orig_dtype) * weight\n";
  PatchSet set = patches_of(dir, model);
  ASSERT_TRUE(applied_at(set, "norm.rms_norm", 9)) << listed(set);
  EXPECT_NE(set.files.at(0).patched.find("return torch_npu.npu_rms_norm(x, weight, epsilon=1e-6)[0]"), std::string::npos)
      << set.files.at(0).patched;
}

// Grouped-query attention written with the query's heads regrouped per KV
// head against keys and values with a unit group axis (qwen3_like's form);
// `key_view` is how the key gets that axis.
std::string grouped_attention(const std::string& key_view) {
  return "import math\n"
         "import torch\n"
         "import torch.nn as nn\n"
         "\n"
         "\n"
         "class GroupedAttention(nn.Module):\n"
         "    def __init__(self, hidden, heads, kv_heads, head_dim):\n"
         "        super().__init__()\n"
         "        self.n_heads = heads\n"
         "        self.n_kv_heads = kv_heads\n"
         "        self.head_dim = head_dim\n"
         "        self.q_proj = nn.Linear(hidden, heads * head_dim, bias=False)\n"
         "        self.k_proj = nn.Linear(hidden, kv_heads * head_dim, bias=False)\n"
         "        self.v_proj = nn.Linear(hidden, kv_heads * head_dim, bias=False)\n"
         "        self.o_proj = nn.Linear(heads * head_dim, hidden, bias=False)\n"
         "\n"
         "    def forward(self, x):\n"
         "        bsz, q_len, _ = x.shape\n"
         "        q = self.q_proj(x).view(bsz, q_len, self.n_heads, self.head_dim).transpose(1, 2)\n"
         "        k = self.k_proj(x).view(bsz, q_len, self.n_kv_heads, self.head_dim).transpose(1, 2)\n"
         "        v = self.v_proj(x).view(bsz, q_len, self.n_kv_heads, self.head_dim).transpose(1, 2)\n"
         "        mask = torch.full((q_len, q_len), float(\"-inf\")).triu(1)\n"
         "        group = self.n_heads // self.n_kv_heads\n"
         "        q = q.reshape(bsz, self.n_kv_heads, group, q_len, self.head_dim)\n"
         "        scores = torch.matmul(q, " + key_view + ".transpose(-1, -2)) / math.sqrt(self.head_dim)\n"
         "        scores = scores + mask\n"
         "        probs = torch.softmax(scores.float(), dim=-1).type_as(q)\n"
         "        out = torch.matmul(probs, v[:, :, None])\n"
         "        out = out.reshape(bsz, self.n_heads, q_len, self.head_dim).transpose(1, 2).reshape(bsz, q_len, -1)\n"
         "        return self.o_proj(out)\n";
}

constexpr const char* kGqaConfig =
    R"({"hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "torch_dtype": "bfloat16"})";

// Each query head of a group reads its group's KV head, which is FIA's GQA:
// the call gets the tensors before the views, and the model's reshape of the
// result back to [bsz, heads, s, d] reads FIA's output as it is.
TEST(BindingSpelling, GroupedQueryFormPassesTheTensorsBeforeTheViews) {
  ScratchDir dir("spell_grouped");
  PatchSet set = patches_of(dir, grouped_attention("k.unsqueeze(2)"), kGqaConfig);
  ASSERT_TRUE(applied_at(set, "attention.fia_prefill", 24)) << listed(set);
  const std::string& patched = set.files.at(0).patched;
  EXPECT_NE(patched.find("npu_fused_infer_attention_score(\n            q, k, v, num_heads="), std::string::npos) << patched;
  EXPECT_EQ(patched.find("unsqueeze(2)"), std::string::npos) << patched;
  EXPECT_EQ(patched.find("v[:, :, None]"), std::string::npos) << patched;
}

// The unit axis counted from the back is the same axis.
TEST(BindingSpelling, GroupedQueryFormReadsANegativeUnitAxis) {
  ScratchDir dir("spell_grouped_negative");
  PatchSet set = patches_of(dir, grouped_attention("k.unsqueeze(-3)"), kGqaConfig);
  ASSERT_TRUE(applied_at(set, "attention.fia_prefill", 24)) << listed(set);
  EXPECT_NE(set.files.at(0).patched.find("q, k, v, num_heads="), std::string::npos) << set.files.at(0).patched;
}

// A key with its new axis elsewhere (before the KV heads) is not the grouped
// form: its 5-D view is refused, naming both shapes.
TEST(BindingSpelling, GroupedQueryAgainstAKeyWithAnotherNewAxisIsRefused) {
  ScratchDir dir("spell_grouped_other_axis");
  PatchSet set = patches_of(dir, grouped_attention("k[:, None]"), kGqaConfig);
  EXPECT_FALSE(applied_at(set, "attention.fia_prefill", 24)) << listed(set);
  std::string why;
  for (const ManualStep& m : set.manual)
    if (m.candidate.rfind("attention.fia_prefill@", 0) == 0) why = m.what;
  EXPECT_NE(why.find("key is bound to `k[:, None]`"), std::string::npos) << listed(set);
  EXPECT_NE(why.find("a 5-D view, where the fused call takes key as (B, KVN, S, D)"), std::string::npos) << why;
}

}  // namespace
}  // namespace npufuse::apply
