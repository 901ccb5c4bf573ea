// Calls through function tables and function-valued locals in the inlined dataflow.
#include <gtest/gtest.h>

#include <algorithm>

#include "model/dispatch_table.h"
#include "model/module_roles.h"

namespace npufuse::model {
namespace {

// An attention module in the HF shape: the eager helper by default, another
// implementation from a table when the config asks for one.
std::string attention_model(const std::string& table_definition) {
  return "import torch\n"
         "from torch import nn\n" +
         table_definition +
         "def eager_attention_forward(module, query, key, value, scaling):\n"
         "    w = torch.matmul(query, key.transpose(2, 3)) * scaling\n"
         "    w = torch.softmax(w, dim=-1)\n"
         "    w = nn.functional.dropout(w, p=0.1, training=module.training)\n"
         "    return torch.matmul(w, value), w\n"
         "def sdpa_attention_forward(module, query, key, value, scaling):\n"
         "    return nn.functional.scaled_dot_product_attention(query, key, value, scale=scaling), None\n"
         "class Attention(nn.Module):\n"
         "    def __init__(self, config):\n"
         "        super().__init__()\n"
         "        self.config = config\n"
         "        self.scaling = 0.125\n"
         "        self.o_proj = nn.Linear(config.hidden_size, config.hidden_size)\n"
         "    def forward(self, q, k, v):\n"
         "        attention_interface = eager_attention_forward\n"
         "        if self.config._attn_implementation != \"eager\":\n"
         "            attention_interface = TABLE[self.config._attn_implementation]\n"
         "        out, weights = attention_interface(self, q, k, v, scaling=self.scaling)\n"
         "        return self.o_proj(out), weights\n";
}

struct Built {
  SourceSet sources;
  ModelConfig config;
  FunctionDataflow graph;
};

std::unique_ptr<Built> build(const std::string& text, nlohmann::json config, const std::string& cls = "Attention") {
  auto b = std::make_unique<Built>(Built{SourceSet::from_texts({{"m.py", text}}), ModelConfig(), {}});
  if (!config.is_null()) b->config = ModelConfig::from_json(std::move(config), "config.json");
  ConfigSchema schema = ConfigSchema::discover(b->sources);
  Evaluator ev(b->sources, b->config, schema);
  RoleTable roles = RoleTable::infer(b->sources, ev);
  RoleTableSubmodules lookup(roles, &b->config);
  b->graph = build_inlined_forward(b->sources, *b->sources.find_class(cls), lookup);
  return b;
}

const DataflowOp* find_op(const FunctionDataflow& g, const std::string& name) {
  for (const DataflowOp& op : g.ops)
    if (op.name == name) return &op;
  return nullptr;
}

size_t count(const FunctionDataflow& g, const std::string& name) {
  return static_cast<size_t>(std::count_if(g.ops.begin(), g.ops.end(), [&](const DataflowOp& op) { return op.name == name; }));
}

TEST(DispatchTable, ImportedTableKeepsTheEagerPathAndMarksTheOtherUnresolved) {
  auto b = build(attention_model("from ...modeling_utils import ALL_ATTENTION_FUNCTIONS as TABLE\n"), nullptr);
  const FunctionDataflow& g = b->graph;
  // The eager helper is inlined under the condition that keeps it.
  const DataflowOp* softmax = find_op(g, "softmax");
  ASSERT_NE(softmax, nullptr) << g.dump();
  EXPECT_EQ(softmax->condition, "not (self.config._attn_implementation != \"eager\")");
  // The table entry is one opaque call, marked unresolved with the reason.
  ASSERT_EQ(g.unresolved_calls().size(), 1u) << g.dump();
  const DataflowOp& table_call = g.ops[static_cast<size_t>(g.unresolved_calls()[0])];
  EXPECT_EQ(table_call.name, "call:TABLE[self.config._attn_implementation]");
  EXPECT_EQ(table_call.condition, "self.config._attn_implementation != \"eager\"");
  EXPECT_NE(table_call.unresolved_reason.find("not defined by literals"), std::string::npos);
  // Both results meet in a phi before the unpacking.
  const DataflowOp& unpack = *find_op(g, "unpack");
  const DataflowOp& phi = g.producer_of(unpack.inputs[0]);
  EXPECT_EQ(phi.name, "phi");
  EXPECT_EQ(phi.inputs.size(), 2u);
  EXPECT_NE(g.dump().find("unresolved: table TABLE"), std::string::npos);
}

TEST(DispatchTable, LiteralTableWithAKnownKeyInlinesTheEntry) {
  std::string table = "TABLE = {\"eager\": eager_attention_forward, \"sdpa\": sdpa_attention_forward}\n";
  // The dict literal is written after the functions it names.
  std::string text = attention_model("") + table;
  auto known = build(text, {{"hidden_size", 8}, {"attn_implementation", "sdpa"}});
  EXPECT_TRUE(known->graph.unresolved_calls().empty()) << known->graph.dump();
  EXPECT_EQ(count(known->graph, "sdpa"), 1u) << known->graph.dump();
  EXPECT_EQ(count(known->graph, "softmax"), 1u);  // the default eager path is still there

  auto unknown = build(text, nullptr);
  ASSERT_EQ(unknown->graph.unresolved_calls().size(), 1u) << unknown->graph.dump();
  EXPECT_NE(unknown->graph.ops[static_cast<size_t>(unknown->graph.unresolved_calls()[0])].unresolved_reason.find("not known statically"),
            std::string::npos);
  EXPECT_EQ(count(unknown->graph, "sdpa"), 0u);

  auto missing = build(text, {{"hidden_size", 8}, {"attn_implementation", "flash"}});
  ASSERT_EQ(missing->graph.unresolved_calls().size(), 1u);
  EXPECT_NE(missing->graph.ops[static_cast<size_t>(missing->graph.unresolved_calls()[0])].unresolved_reason.find("no entry 'flash'"),
            std::string::npos);
}

TEST(DispatchTable, RegistryClassItemAssignmentAndConstantKey) {
  std::string text =
      "import torch\n"
      "from torch import nn\n"
      "def plain(x):\n"
      "    return torch.relu(x)\n"
      "def fancy(x):\n"
      "    return torch.sigmoid(x)\n"
      "class Registry(dict):\n"
      "    _mapping = {\"plain\": plain}\n"
      "KERNELS = Registry()\n"
      "KERNELS[\"fancy\"] = fancy\n"
      "MODE = \"fancy\"\n"
      "class Block(nn.Module):\n"
      "    def forward(self, x):\n"
      "        return KERNELS[MODE](x) + KERNELS[\"plain\"](x)\n";
  SourceSet sources = SourceSet::from_texts({{"m.py", text}});
  std::optional<DispatchTable> table = find_dispatch_table(sources, "KERNELS");
  ASSERT_TRUE(table.has_value());
  EXPECT_EQ(table->entries.size(), 2u);
  auto b = build(text, nullptr, "Block");
  EXPECT_TRUE(b->graph.unresolved_calls().empty()) << b->graph.dump();
  EXPECT_EQ(count(b->graph, "sigmoid"), 1u);
  EXPECT_EQ(count(b->graph, "relu"), 1u);
}

TEST(DispatchTable, ModulePassedToAHelperReadsItsOwnAttributes) {
  auto b = build(attention_model("TABLE = {}\n"), nullptr);
  // eager_attention_forward's `module.training` is the attention module's flag.
  EXPECT_NE(find_op(b->graph, "self.training"), nullptr) << b->graph.dump();
}

TEST(DispatchTable, FunctionChosenByATernaryCarriesEachCondition) {
  std::string text =
      "import torch\n"
      "from torch import nn\n"
      "def a(x):\n"
      "    return torch.relu(x)\n"
      "def b(x):\n"
      "    return torch.tanh(x)\n"
      "class Block(nn.Module):\n"
      "    def forward(self, x, fast):\n"
      "        f = a if fast else b\n"
      "        return f(x)\n";
  auto built = build(text, nullptr, "Block");
  const FunctionDataflow& g = built->graph;
  ASSERT_NE(find_op(g, "relu"), nullptr) << g.dump();
  EXPECT_EQ(find_op(g, "relu")->condition, "fast");
  EXPECT_EQ(find_op(g, "tanh")->condition, "not (fast)");
  ASSERT_FALSE(g.returns.empty());
  EXPECT_EQ(g.producer_of(g.returns[0]).name, "phi");
}

TEST(DispatchTable, SubmoduleHeldInALocalIsInlined) {
  std::string text =
      "import torch\n"
      "from torch import nn\n"
      "class Expert(nn.Module):\n"
      "    def __init__(self):\n"
      "        super().__init__()\n"
      "        self.w = nn.Linear(4, 4)\n"
      "    def forward(self, x):\n"
      "        return torch.relu(self.w(x))\n"
      "class Experts(nn.Module):\n"
      "    def __init__(self):\n"
      "        super().__init__()\n"
      "        self.experts = nn.ModuleList([Expert() for _ in range(4)])\n"
      "    def forward(self, x):\n"
      "        out = torch.zeros_like(x)\n"
      "        for i in range(4):\n"
      "            expert = self.experts[i]\n"
      "            out = out + expert(x)\n"
      "        return out\n";
  auto b = build(text, nullptr, "Experts");
  const FunctionDataflow& g = b->graph;
  EXPECT_EQ(count(g, "relu"), 1u) << g.dump();
  EXPECT_EQ(count(g, "linear"), 1u);
  for (const DataflowOp& op : g.ops) EXPECT_NE(op.cls, OpClass::Call) << op.name;
}

}  // namespace
}  // namespace npufuse::model
