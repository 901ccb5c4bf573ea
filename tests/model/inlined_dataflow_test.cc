// A block's forward with its submodules and helpers inlined.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "model/module_roles.h"

namespace npufuse::model {
namespace {

struct Inlined {
  SourceSet sources;
  ModelConfig config;
  ConfigSchema schema;
  FunctionDataflow graph;
};

std::unique_ptr<Inlined> inline_sources(SourceSet sources, const std::string& cls, bool unroll = false) {
  auto r = std::make_unique<Inlined>(Inlined{std::move(sources), ModelConfig(), {}, {}});
  r->schema = ConfigSchema::discover(r->sources);
  Evaluator ev(r->sources, r->config, r->schema);
  RoleTable roles = RoleTable::infer(r->sources, ev);
  RoleTableSubmodules lookup(roles);
  r->graph = build_inlined_forward(r->sources, *r->sources.find_class(cls), lookup, 8, unroll);
  return r;
}

std::unique_ptr<Inlined> inline_forward(const std::string& model, const std::string& cls, bool unroll = false) {
  return inline_sources(SourceSet::load({std::string(NPUFUSE_SOURCE_DIR) + "/tests/models/" + model + "/model.py"}), cls,
                        unroll);
}

size_t count(const FunctionDataflow& g, const std::string& name) {
  return static_cast<size_t>(std::count_if(g.ops.begin(), g.ops.end(), [&](const DataflowOp& op) { return op.name == name; }));
}

bool reads(const FunctionDataflow& g, const std::string& attribute) {
  return std::any_of(g.ops.begin(), g.ops.end(), [&](const DataflowOp& op) { return op.name == attribute; });
}

TEST(InlinedDataflow, LlamaDecoderLayerShowsNormsProjectionsAndRope) {
  auto r = inline_forward("llama_like", "LlamaDecoderLayer");
  const FunctionDataflow& g = r->graph;
  // q, k, v, o and gate, up, down: nn.Linear becomes `linear` reading its weight.
  EXPECT_EQ(count(g, "linear"), 7u) << g.dump();
  EXPECT_TRUE(reads(g, "self.self_attn.q_proj.weight"));
  // Both RMSNorms inlined: their rsqrt, with their own weights.
  EXPECT_EQ(count(g, "rsqrt"), 2u);
  EXPECT_TRUE(reads(g, "self.input_layernorm.weight"));
  EXPECT_TRUE(reads(g, "self.post_attention_layernorm.weight"));
  // rotate_half inlined through apply_rotary_pos_emb: its cat and neg, for q and k.
  EXPECT_GE(count(g, "neg"), 2u);
  // The activation module became its op.
  EXPECT_EQ(count(g, "silu"), 1u);
  // No submodule call is left opaque.
  for (const DataflowOp& op : g.ops) EXPECT_NE(op.cls, OpClass::Module) << op.name;
  ASSERT_FALSE(g.returns.empty());
}

// nn.Linear adds its bias by default: a chain over it is not a bias-free
// F.linear. `bias=False` has none, and a setting read from the config is
// left out (unknown here).
TEST(InlinedDataflow, LinearReadsItsBiasUnlessItHasNone) {
  auto gptj = inline_forward("gptj_style", "GPTJBlock");
  EXPECT_TRUE(reads(gptj->graph, "self.mlp.fc_in.bias")) << gptj->graph.dump();   // nn.Linear(n_embd, inner)
  EXPECT_TRUE(reads(gptj->graph, "self.mlp.fc_out.bias"));
  EXPECT_FALSE(reads(gptj->graph, "self.attn.q_proj.bias"));                       // bias=False
  auto llama = inline_forward("llama_like", "LlamaDecoderLayer");
  EXPECT_FALSE(reads(llama->graph, "self.self_attn.q_proj.bias"));                 // bias=config.attention_bias
}

// A subclass that only hands its bias flag on to the base's __init__
// (`ColumnParallelLinear(in, out)` -> `super().__init__(in, out // world_size,
// bias, dtype)`) registers no bias when the flag is off, like the base.
TEST(InlinedDataflow, BiasFlagHandedOnThroughSuperInitIsFollowed) {
  auto r = inline_forward("deepseek_v3_like", "MLP");
  EXPECT_FALSE(reads(r->graph, "self.w1.bias")) << r->graph.dump();  // ColumnParallelLinear(dim, inter_dim)
  EXPECT_FALSE(reads(r->graph, "self.w2.bias"));                      // RowParallelLinear(inter_dim, dim)
}

TEST(InlinedDataflow, ExpertLoopInlinesTheExpertOnceInsideTheLoop) {
  auto r = inline_forward("qwen3_moe_like", "Qwen3MoeSparseMoeBlock");
  const FunctionDataflow& g = r->graph;
  // The expert MLP body appears once (the loop is summarised, not unrolled).
  EXPECT_EQ(count(g, "linear"), 4u) << g.dump();  // gate + the expert's gate/up/down
  bool in_loop = false;
  for (const DataflowOp& op : g.ops)
    if (op.name == "index_add") in_loop = op.condition.rfind("for ", 0) == 0 || op.condition.find(" for ") != std::string::npos;
  EXPECT_TRUE(in_loop);
  // One top-k and one one_hot route tokens; the aux-loss helper (called only
  // under `self.training`) stays one opaque call, so its copies are not inlined.
  size_t routing_topk = 0, training_topk = 0;
  for (const DataflowOp& op : g.ops) {
    if (op.name != "topk") continue;
    if (op.condition == "self.training") ++training_topk;
    else if (op.condition.empty()) ++routing_topk;
  }
  EXPECT_EQ(routing_topk, 1u);
  EXPECT_EQ(training_topk, 0u);
  EXPECT_EQ(count(g, "one_hot"), 1u);
  EXPECT_EQ(count(g, "call:load_balancing_loss"), 1u);
}

TEST(InlinedDataflow, ActivationPickedFromATableBecomesItsOp) {
  std::string text =
      "from torch import nn\n"
      "ACT2FN = {}\n"
      "class Mlp(nn.Module):\n"
      "    def __init__(self, config):\n"
      "        super().__init__()\n"
      "        self.up = nn.Linear(config.hidden_size, 4 * config.hidden_size)\n"
      "        self.down = nn.Linear(4 * config.hidden_size, config.hidden_size)\n"
      "        self.act = ACT2FN[config.hidden_act]\n"
      "    def forward(self, x):\n"
      "        return self.down(self.act(self.up(x)))\n";
  for (bool with_config : {false, true}) {
    SourceSet sources = SourceSet::from_texts({{"m.py", text}});
    ConfigSchema schema = ConfigSchema::discover(sources);
    ModelConfig config = with_config ? ModelConfig::from_json({{"hidden_size", 8}, {"hidden_act", "gelu"}}, "c.json") : ModelConfig();
    Evaluator ev(sources, config, schema);
    RoleTable roles = RoleTable::infer(sources, ev);
    RoleTableSubmodules lookup(roles);
    FunctionDataflow g = build_inlined_forward(sources, *sources.find_class("Mlp"), lookup);
    EXPECT_EQ(count(g, with_config ? "gelu" : "activation[hidden_act]"), 1u) << g.dump();
    EXPECT_EQ(count(g, "linear"), 2u);
  }
}

// HF's tanh-approximated GELUs are F.gelu(x, approximate="tanh"): the op a
// GeGLU rule's pattern spells, with the literal as its argument.
TEST(InlinedDataflow, TanhGeluNamesBecomeGeluWithTheTanhApproximation) {
  std::string text =
      "from torch import nn\n"
      "ACT2FN = {}\n"
      "class Mlp(nn.Module):\n"
      "    def __init__(self, config):\n"
      "        super().__init__()\n"
      "        self.up = nn.Linear(config.hidden_size, 4 * config.hidden_size)\n"
      "        self.act = ACT2FN[config.hidden_act]\n"
      "    def forward(self, x):\n"
      "        return self.act(self.up(x))\n";
  for (const char* name : {"gelu_pytorch_tanh", "gelu_new", "gelu_fast"}) {
    SourceSet sources = SourceSet::from_texts({{"m.py", text}});
    ConfigSchema schema = ConfigSchema::discover(sources);
    ModelConfig config = ModelConfig::from_json({{"hidden_size", 8}, {"hidden_act", name}}, "c.json");
    Evaluator ev(sources, config, schema);
    RoleTable roles = RoleTable::infer(sources, ev);
    RoleTableSubmodules lookup(roles);
    FunctionDataflow g = build_inlined_forward(sources, *sources.find_class("Mlp"), lookup);
    ASSERT_EQ(count(g, "gelu"), 1u) << name << "\n" << g.dump();
    EXPECT_NE(g.dump().find("approximate="), std::string::npos) << name << "\n" << g.dump();
    EXPECT_NE(g.dump().find("tanh"), std::string::npos) << name << "\n" << g.dump();
  }
}

TEST(InlinedDataflow, AttributeBoundToATorchFunctionBecomesItsOp) {
  std::string text =
      "import torch\n"
      "import torch.nn.functional as F\n"
      "from torch import nn\n"
      "class Gated(nn.Module):\n"
      "    def __init__(self, d, h):\n"
      "        super().__init__()\n"
      "        self.gate = nn.Linear(d, h)\n"
      "        self.up = nn.Linear(d, h)\n"
      "        self.down = nn.Linear(h, d)\n"
      "        self.activation = F.silu\n"
      "        self.squash = torch.sigmoid\n"
      "        self.dtype = torch.float32\n"
      "    def forward(self, x):\n"
      "        return self.down(self.activation(self.gate(x)) * self.squash(self.up(x)))\n";
  SourceSet sources = SourceSet::from_texts({{"m.py", text}});
  ConfigSchema schema = ConfigSchema::discover(sources);
  ModelConfig config;
  Evaluator ev(sources, config, schema);
  RoleTable roles = RoleTable::infer(sources, ev);
  RoleTableSubmodules lookup(roles);
  FunctionDataflow g = build_inlined_forward(sources, *sources.find_class("Gated"), lookup);
  EXPECT_EQ(count(g, "silu"), 1u) << g.dump();
  EXPECT_EQ(count(g, "sigmoid"), 1u) << g.dump();
  EXPECT_FALSE(reads(g, "self.activation")) << g.dump();
  // A dtype held on self is a setting, not a function.
  const ClassInstance* inst = roles.standalone("Gated");
  ASSERT_NE(inst, nullptr);
  for (const Attribute& a : inst->attributes)
    if (a.name == "dtype") EXPECT_NE(a.kind, AttributeKind::Callable);
}

// A @classmethod called through self binds its arguments after `cls`
// (GPT-NeoX-Japanese's `self._merge_heads(out, heads, size)`).
TEST(InlinedDataflow, ClassmethodCalledThroughSelfBindsAfterCls) {
  std::string text =
      "import torch\n"
      "from torch import nn\n"
      "class Merge(nn.Module):\n"
      "    @classmethod\n"
      "    def _merge(cls, tensor, heads):\n"
      "        return tensor.permute(0, 2, 1, 3).reshape(tensor.size(0), tensor.size(2), heads * tensor.size(3))\n"
      "    def forward(self, x):\n"
      "        return self._merge(torch.relu(x), 4)\n";
  SourceSet sources = SourceSet::from_texts({{"m.py", text}});
  ConfigSchema schema = ConfigSchema::discover(sources);
  ModelConfig config;
  Evaluator ev(sources, config, schema);
  RoleTable roles = RoleTable::infer(sources, ev);
  RoleTableSubmodules lookup(roles);
  FunctionDataflow g = build_inlined_forward(sources, *sources.find_class("Merge"), lookup);
  const DataflowOp* permute = nullptr;
  for (const DataflowOp& op : g.ops)
    if (op.name == "permute") permute = &op;
  ASSERT_NE(permute, nullptr) << g.dump();
  // The permuted tensor is relu(x), not the head count.
  EXPECT_EQ(g.producer_of(permute->inputs.at(0)).name, "relu") << g.dump();
}

// A helper's flag that the call binds to a literal (`use_qk_l2norm_in_kernel=True`,
// or its default False left standing) runs one arm of `if flag:` only; a flag
// whose value the call does not fix keeps both arms.
TEST(InlinedDataflow, AFlagTheCallFixesRunsOneArm) {
  const char* text =
      "import torch\n"
      "from torch import nn\n"
      "def kernel(q, k, use_qk_l2norm_in_kernel=False):\n"
      "    if use_qk_l2norm_in_kernel:\n"
      "        q = q * torch.rsqrt((q * q).sum(-1, keepdim=True) + 1e-6)\n"
      "    if not use_qk_l2norm_in_kernel:\n"
      "        k = torch.tanh(k)\n"
      "    return q @ k\n"
      "class On(nn.Module):\n"
      "    def forward(self, q, k):\n"
      "        return kernel(q, k, use_qk_l2norm_in_kernel=True)\n"
      "class Off(nn.Module):\n"
      "    def forward(self, q, k):\n"
      "        return kernel(q, k)\n"
      "class Passed(nn.Module):\n"
      "    def forward(self, q, k, flag):\n"
      "        return kernel(q, k, use_qk_l2norm_in_kernel=flag)\n";
  auto on = inline_sources(SourceSet::from_texts({{"m.py", text}}), "On");
  EXPECT_EQ(count(on->graph, "rsqrt"), 1u) << on->graph.dump();
  EXPECT_EQ(count(on->graph, "tanh"), 0u);
  EXPECT_EQ(count(on->graph, "phi"), 0u);
  auto off = inline_sources(SourceSet::from_texts({{"m.py", text}}), "Off");
  EXPECT_EQ(count(off->graph, "rsqrt"), 0u) << off->graph.dump();
  EXPECT_EQ(count(off->graph, "tanh"), 1u);
  auto passed = inline_sources(SourceSet::from_texts({{"m.py", text}}), "Passed");
  EXPECT_EQ(count(passed->graph, "rsqrt"), 1u) << passed->graph.dump();
  EXPECT_EQ(count(passed->graph, "tanh"), 1u);
  EXPECT_EQ(count(passed->graph, "phi"), 2u);
}

TEST(InlinedDataflow, RecursionAndDepthAreBounded) {
  std::string text =
      "from torch import nn\n"
      "def ping(x):\n"
      "    return pong(x)\n"
      "def pong(x):\n"
      "    return ping(x) + 1\n"
      "class A(nn.Module):\n"
      "    def forward(self, x):\n"
      "        return ping(x)\n";
  SourceSet sources = SourceSet::from_texts({{"m.py", text}});
  ConfigSchema schema = ConfigSchema::discover(sources);
  ModelConfig config;
  Evaluator ev(sources, config, schema);
  RoleTable roles = RoleTable::infer(sources, ev);
  RoleTableSubmodules lookup(roles);
  FunctionDataflow g = build_inlined_forward(sources, *sources.find_class("A"), lookup);
  EXPECT_EQ(count(g, "call:ping"), 1u) << g.dump();  // the recursive call stays a call
}

// The backbone's `for layer in self.layers: h = layer(h, ...)`: kept as one
// opaque call by default; unrolled on request into two inlined copies of the
// decoder layer, the second reading what the first returned.
TEST(InlinedDataflow, LayerLoopIsUnrolledIntoTwoCopiesOfTheLayerWhenAsked) {
  auto plain = inline_forward("llama_like", "LlamaModel");
  EXPECT_EQ(count(plain->graph, "rsqrt"), 1u) << plain->graph.dump();  // the final norm only
  for (const DataflowOp& op : plain->graph.ops) EXPECT_EQ(op.unrolled, 0) << op.name;

  auto r = inline_forward("llama_like", "LlamaModel", /*unroll=*/true);
  const FunctionDataflow& g = r->graph;
  // Two norms per layer copy, and the final norm.
  EXPECT_EQ(count(g, "rsqrt"), 5u) << g.dump();
  EXPECT_EQ(count(g, "linear"), 14u);
  size_t first = 0, second = 0;
  for (const DataflowOp& op : g.ops) {
    first += op.unrolled == 1;
    second += op.unrolled == 2;
    if (op.unrolled != 0) EXPECT_NE(op.condition.find("for layer in self.layers"), std::string::npos) << op.name;
  }
  EXPECT_GT(first, 0u);
  EXPECT_EQ(first, second);  // the same body twice
  // The second copy reads a value the first copy computed (the layer's output).
  bool carried = false;
  for (const DataflowOp& op : g.ops)
    if (op.unrolled == 2)
      for (int v : op.inputs) carried |= v >= 0 && g.producer_of(v).unrolled == 1;
  EXPECT_TRUE(carried);
  // The layer's weights are read under the module list's path.
  EXPECT_TRUE(reads(g, "self.layers[].input_layernorm.weight"));
}

// A submodule built as an MoE block (returning `(out, router_logits)`) or as a
// dense MLP (a tensor), and its result tested with `isinstance(out, tuple)`
// (HF Qwen3-MoE's decoder layer; qwen3_moe_like): the tuple is unpacked in the
// true arm only, the dense output passes the false arm as it is, and nothing
// unpacks the merge of the two.
TEST(InlinedDataflow, IsinstanceTupleSplitsAMergedModuleResultByKind) {
  auto r = inline_forward("qwen3_moe_like", "Qwen3MoeForCausalLM", /*unroll=*/true);
  const FunctionDataflow& g = r->graph;
  size_t unpacks = 0;
  for (const DataflowOp& op : g.ops)
    if (op.name == "unpack" && op.line == 213) {
      ++unpacks;
      EXPECT_EQ(g.producer_of(op.inputs.at(0)).name, "tuple") << g.dump();
    }
  EXPECT_EQ(unpacks, 2u) << g.dump();  // once per layer copy
  // Each copy's residual add (line 214) reads a merge of the MoE block's
  // first element and the dense MLP's down projection.
  size_t adds = 0;
  for (const DataflowOp& op : g.ops) {
    if (op.name != "add" || op.line != 214) continue;
    ++adds;
    const DataflowOp& merged = g.producer_of(op.inputs.at(1));
    ASSERT_EQ(merged.name, "phi") << g.dump();
    std::set<std::string> arms;
    for (int v : merged.inputs) arms.insert(g.producer_of(v).name);
    EXPECT_TRUE(arms.count("linear")) << g.dump();
    EXPECT_FALSE(arms.count("tuple")) << g.dump();
  }
  EXPECT_EQ(adds, 2u) << g.dump();
}

// A value computed inside an inlined submodule is named by the shallowest
// function that names it (`z = self.shared(x)`), not by the callee's local (`y`).
TEST(InlinedDataflow, ValuesAreNamedAsTheBuiltFunctionNamesThem) {
  const char* text = R"(import torch
from torch import nn


class Shared(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        y = self.proj(x)
        return y


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.shared = Shared()

    def forward(self, x):
        z = self.shared(x)
        w = z
        return x + w


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, h):
        return self.block(h)
)";
  // Built for Block, and for Outer, which names nothing of the block's: z,
  // given one level above the shared MLP's y, both times.
  for (const char* cls : {"Block", "Outer"}) {
    auto r = inline_sources(SourceSet::from_texts({{"block.py", text}}), cls);
    const FunctionDataflow& g = r->graph;
    auto linear = std::find_if(g.ops.begin(), g.ops.end(), [](const DataflowOp& op) { return op.name == "linear"; });
    ASSERT_NE(linear, g.ops.end()) << g.dump();
    EXPECT_EQ(g.values.at(static_cast<size_t>(linear->outputs.at(0))).name, "z") << cls << "\n" << g.dump();
  }
}

// Only a loop over decoder layers is unrolled: a loop over a module list of
// experts stays as it was, and so does a layer loop of a forward that is
// itself inlined into another (the causal-LM head's call of the backbone).
TEST(InlinedDataflow, OnlyTheOwnLoopOverDecoderLayersIsUnrolled) {
  const char* text =
      "import torch\n"
      "from torch import nn\n"
      "class Expert(nn.Module):\n"
      "    def __init__(self):\n"
      "        super().__init__()\n"
      "        self.w = nn.Linear(8, 8, bias=False)\n"
      "    def forward(self, x):\n"
      "        return torch.relu(self.w(x))\n"
      "class Experts(nn.Module):\n"
      "    def __init__(self):\n"
      "        super().__init__()\n"
      "        self.experts = nn.ModuleList([Expert() for _ in range(4)])\n"
      "    def forward(self, x):\n"
      "        y = x\n"
      "        for expert in self.experts:\n"
      "            y = y + expert(x)\n"
      "        return y\n";
  auto r = inline_sources(SourceSet::from_texts({{"experts.py", text}}), "Experts", /*unroll=*/true);
  for (const DataflowOp& op : r->graph.ops) EXPECT_EQ(op.unrolled, 0) << op.name;
  EXPECT_EQ(count(r->graph, "relu"), 0u) << r->graph.dump();  // the element call stays opaque, as before

  auto head = inline_forward("llama_like", "LlamaForCausalLM", /*unroll=*/true);
  for (const DataflowOp& op : head->graph.ops) EXPECT_EQ(op.unrolled, 0) << op.name;
}

}  // namespace
}  // namespace npufuse::model
