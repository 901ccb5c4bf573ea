// Matching the whole model: every module class's forward, and the backbone's
// layer loop unrolled for chains that run across two decoder layers.
#include "plan/model_matches.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "model/evaluator.h"
#include "model/module_roles.h"
#include "rules/ruleset.h"

namespace npufuse::plan {
namespace {

struct Matched {
  model::SourceSet sources;
  model::ModelConfig config;
  model::ConfigSchema schema;
  rules::RuleSet rules;
  std::unique_ptr<model::RoleTable> roles;
  ModelMatches matches;
};

std::unique_ptr<Matched> match_sources(model::SourceSet sources, unsigned threads = 1) {
  auto m = std::make_unique<Matched>();
  m->sources = std::move(sources);
  m->schema = model::ConfigSchema::discover(m->sources);
  model::Evaluator ev(m->sources, m->config, m->schema);
  m->roles = std::make_unique<model::RoleTable>(model::RoleTable::infer(m->sources, ev));
  m->rules = rules::RuleSet::load(rules::embedded_rule_files(), "rules");
  m->matches = match_model(m->sources, *m->roles, m->rules, nullptr, nullptr, nullptr, {}, threads);
  return m;
}

std::unique_ptr<Matched> match_test_model(const std::string& name, unsigned threads = 1) {
  return match_sources(model::SourceSet::load({std::string(NPUFUSE_SOURCE_DIR) + "/tests/models/" + name + "/model.py"}),
                       threads);
}

// What a match result says, in order: where each match and near-miss is, by
// rule, function and model ops.
std::string describe(const ModelMatches& m) {
  std::string out;
  for (const MatchSite& s : m.matches) {
    out += "match " + s.match.pattern->rule->id + " in " + s.function + ":";
    for (int id : s.match.ops) out += " " + std::to_string(id);
    out += "\n";
  }
  for (const NearMissSite& n : m.near_misses)
    out += "near-miss " + n.trace.pattern->rule->id + " in " + n.function + " at " + std::to_string(n.trace.anchor_op) +
           ": " + n.trace.reason + "\n";
  return out;
}

// The graphs are matched on several workers; what comes out, and its order,
// is the same as on one.
TEST(ModelMatches, ThreadsChangeNothing) {
  for (const char* name : {"llama_like", "deepseek_v3_like", "qwen3_moe_like"}) {
    auto one = match_test_model(name, 1);
    auto four = match_test_model(name, 4);
    EXPECT_FALSE(one->matches.matches.empty()) << name;
    EXPECT_EQ(describe(one->matches), describe(four->matches)) << name;
  }
}

int copies_of(const match::Match& m) {
  int mask = 0;
  for (int id : m.ops) {
    int copy = m.target->ops[static_cast<size_t>(id)].unrolled;
    mask |= copy == 0 ? 4 : copy;  // 1, 2, or 4 for code around the loop
  }
  return mask;
}

// A chain with ops in both copies of the unrolled layer loop.
bool has_seam(const Matched& m) {
  return std::any_of(m.matches.matches.begin(), m.matches.matches.end(), [](const MatchSite& s) {
    return s.match.pattern->rule->id == "norm.add_rms_norm" && copies_of(s.match) == 3;
  });
}

// llama_like: the MLP residual add at the end of one layer and the next
// layer's input norm are one add+RMSNorm chain of the backbone's forward,
// and so are the last layer's add and the final norm after the loop.
TEST(ModelMatches, AddRmsNormIsFoundAcrossTwoLayersOfTheUnrolledLoop) {
  auto m = match_test_model("llama_like");
  int across = 0, into_final_norm = 0;
  for (const MatchSite& s : m->matches.matches) {
    if (s.function != "LlamaModel.forward") continue;
    // Nothing the backbone's graph keeps lies inside one copy of the layer:
    // those chains are the layer's own, found in its forward.
    int mask = copies_of(s.match);
    EXPECT_NE(mask, 1) << s.match.pattern->rule->id;
    EXPECT_NE(mask, 2) << s.match.pattern->rule->id;
    if (s.match.pattern->rule->id != "norm.add_rms_norm") continue;
    EXPECT_TRUE(s.match.pattern->options.across_layers);
    if (mask == 3) ++across;
    if (mask == 6) ++into_final_norm;
  }
  EXPECT_EQ(across, 1);
  EXPECT_EQ(into_final_norm, 1);
  // The layer's own chains are still found once, in the layer's forward.
  size_t in_layer = std::count_if(m->matches.matches.begin(), m->matches.matches.end(), [](const MatchSite& s) {
    return s.function == "LlamaDecoderLayer.forward" && s.match.pattern->rule->id == "norm.add_rms_norm";
  });
  EXPECT_EQ(in_layer, 1u);
}

// A layer that returns a tuple (`hidden_states, present, router_logits`)
// unpacked by the loop: the sum is handed on to the next layer alone; the
// cache entry packed beside it is no other read of the sum.
TEST(ModelMatches, ASeamIsFoundThroughALayerReturningATuple) {
  EXPECT_TRUE(has_seam(*match_test_model("qwen3_moe_like")));
}

// A small model whose decoder layer ends with `layer_return` (its residual
// sum is `hidden_states`) and whose loop reads `layer_outputs[0]`.
std::string indexed_layer_model(const std::string& layer_return) {
  return std::string(
      "import torch\n"
      "from torch import nn\n"
      "\n"
      "\n"
      "class Norm(nn.Module):\n"
      "    def __init__(self, d, eps=1e-6):\n"
      "        super().__init__()\n"
      "        self.weight = nn.Parameter(torch.ones(d))\n"
      "        self.variance_epsilon = eps\n"
      "\n"
      "    def forward(self, x):\n"
      "        dt = x.dtype\n"
      "        x = x.to(torch.float32)\n"
      "        v = x.pow(2).mean(-1, keepdim=True)\n"
      "        x = x * torch.rsqrt(v + self.variance_epsilon)\n"
      "        return self.weight * x.to(dt)\n"
      "\n"
      "\n"
      "class Mlp(nn.Module):\n"
      "    def __init__(self, d):\n"
      "        super().__init__()\n"
      "        self.up = nn.Linear(d, 4 * d, bias=False)\n"
      "        self.down = nn.Linear(4 * d, d, bias=False)\n"
      "\n"
      "    def forward(self, x):\n"
      "        return self.down(torch.relu(self.up(x)))\n"
      "\n"
      "\n"
      "class Attention(nn.Module):\n"
      "    def __init__(self, d):\n"
      "        super().__init__()\n"
      "        self.q_proj = nn.Linear(d, d, bias=False)\n"
      "        self.k_proj = nn.Linear(d, d, bias=False)\n"
      "        self.v_proj = nn.Linear(d, d, bias=False)\n"
      "        self.o_proj = nn.Linear(d, d, bias=False)\n"
      "\n"
      "    def forward(self, x):\n"
      "        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)\n"
      "        w = torch.softmax(q @ k.transpose(-1, -2) / 8.0, dim=-1)\n"
      "        return self.o_proj(w @ v)\n"
      "\n"
      "\n"
      "class Layer(nn.Module):\n"
      "    def __init__(self, d):\n"
      "        super().__init__()\n"
      "        self.input_layernorm = Norm(d)\n"
      "        self.self_attn = Attention(d)\n"
      "        self.post_attention_layernorm = Norm(d)\n"
      "        self.mlp = Mlp(d)\n"
      "\n"
      "    def forward(self, hidden_states, output_attentions=False):\n"
      "        residual = hidden_states\n"
      "        hidden_states = self.self_attn(self.input_layernorm(hidden_states))\n"
      "        hidden_states = residual + hidden_states\n"
      "        residual = hidden_states\n"
      "        hidden_states = self.mlp(self.post_attention_layernorm(hidden_states))\n"
      "        hidden_states = residual + hidden_states\n"
             ) +
         layer_return +
         "\n"
      "\n"
      "class Model(nn.Module):\n"
      "    def __init__(self, d=64, n=2, vocab=100):\n"
      "        super().__init__()\n"
      "        self.embed_tokens = nn.Embedding(vocab, d)\n"
      "        self.layers = nn.ModuleList([Layer(d) for _ in range(n)])\n"
      "        self.norm = Norm(d)\n"
      "\n"
      "    def forward(self, input_ids):\n"
      "        hidden_states = self.embed_tokens(input_ids)\n"
      "        for decoder_layer in self.layers:\n"
      "            layer_outputs = decoder_layer(hidden_states)\n"
      "            hidden_states = layer_outputs[0]\n"
      "        return self.norm(hidden_states)\n"
      "\n";
}

// Older HF layers build their output tuple step by step
// (`outputs = (h,); if output_attentions: outputs += (w,)`) and the loop
// reads `layer_outputs[0]`: the element is the same on both arms.
TEST(ModelMatches, ASeamIsFoundThroughAnOutputTupleGrownUnderAnIf) {
  std::string text = indexed_layer_model(
      "        outputs = (hidden_states,)\n"
      "        if output_attentions:\n"
      "            outputs += (None,)\n"
      "        return outputs\n");
  EXPECT_TRUE(has_seam(*match_sources(model::SourceSet::from_texts({{"layers.py", text}}))));
}

// A layer returning `(hidden_states, None)` read by the loop as
// `layer_outputs[0]`: the element at that position is all the next layer
// reads of the sum.
TEST(ModelMatches, ASeamIsFoundThroughALayerOutputIndexedByTheLoop) {
  std::string text = indexed_layer_model("        return (hidden_states, None)\n");
  EXPECT_TRUE(has_seam(*match_sources(model::SourceSet::from_texts({{"layers.py", text}}))));
}

// deepseek_v3_like builds its FFN as `MLP(...) if dense else MoE(...)`: in
// the unrolled loop both ways are inlined, so the MoE's expert loop, its
// shared expert and the next layer's add + norm are one chain.
TEST(ModelMatches, AConditionalSubmoduleIsInlinedEachWayInTheUnrolledLoop) {
  auto m = match_test_model("deepseek_v3_like");
  int fused_combine = 0;
  for (const MatchSite& s : m->matches.matches) {
    if (s.match.pattern->rule->id != "moe.experts_distribute_add_rms_norm") continue;
    EXPECT_EQ(s.function, "Transformer.forward");
    ++fused_combine;
    bool shared = std::any_of(s.match.bindings.begin(), s.match.bindings.end(),
                              [](const match::Binding& b) { return b.parameter == "shared" && b.value >= 0; });
    EXPECT_TRUE(shared);
  }
  // Into the next layer's attn_norm, and the last layer's into the final norm.
  EXPECT_EQ(fused_combine, 2);
}

}  // namespace
}  // namespace npufuse::plan
