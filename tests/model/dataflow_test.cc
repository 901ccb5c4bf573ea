// SSA dataflow of single functions: canonical names, casts and views,
// unpacking, in-place ops, branches.
#include "model/dataflow.h"

#include <gtest/gtest.h>

namespace npufuse::model {
namespace {

class DataflowTest : public ::testing::Test {
 protected:
  const FunctionDataflow& build(const std::string& body, const std::string& params = "x") {
    std::string text = "import torch\nimport torch.nn.functional as F\ndef helper(t):\n    return t\n"
                       "def f(" + params + "):\n" + body;
    sources_ = std::make_unique<SourceSet>(SourceSet::from_texts({{"m.py", text}}));
    const FunctionDecl* fn = sources_->find_function("f");
    graph_ = build_dataflow(*sources_, *fn->file, *fn->node);
    return graph_;
  }
  std::vector<std::string> names(OpClass cls) const {
    std::vector<std::string> out;
    for (const DataflowOp& op : graph_.ops)
      if (op.cls == cls) out.push_back(op.name);
    return out;
  }
  const DataflowOp& returned(size_t i = 0) const { return graph_.producer_of(graph_.returns.at(i)); }

  std::unique_ptr<SourceSet> sources_;
  FunctionDataflow graph_;
};

TEST_F(DataflowTest, FourSpellingsOfSquareAreOnePowOp) {
  build("    a = x.pow(2)\n    b = x ** 2\n    c = torch.pow(x, 2)\n    d = torch.square(x)\n    return a, b, c, d\n");
  ASSERT_EQ(graph_.returns.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(returned(i).name, "pow") << graph_.dump();
    EXPECT_EQ(returned(i).cls, OpClass::Compute);
    // Each reads the parameter x first.
    EXPECT_EQ(graph_.producer_of(returned(i).inputs[0]).cls, OpClass::Input);
  }
}

// `square` has no exponent argument: the builder supplies the 2, so a rule
// written with `pow(2)` meets a model written with `square()` and back.
// `nn.Softmax(dim=-1)(x)` (CodeGen): a layer built and called in one expression is
// the functional op on the call's input with the constructor's arguments; a layer
// with weights built that way stays an opaque call.
TEST_F(DataflowTest, LayerBuiltAndCalledInOneExpressionIsItsFunctionalOp) {
  build("    a = torch.nn.Softmax(dim=-1)(x)\n    b = torch.nn.Linear(4, 4)(x)\n    return a, b\n");
  ASSERT_EQ(graph_.returns.size(), 2u);
  const DataflowOp& soft = returned(0);
  EXPECT_EQ(soft.name, "softmax") << graph_.dump();
  ASSERT_EQ(soft.inputs.size(), 2u) << graph_.dump();
  EXPECT_EQ(graph_.producer_of(soft.inputs[0]).cls, OpClass::Input);
  EXPECT_EQ(soft.attrs.at(1), "dim=");
  EXPECT_EQ(returned(1).name, "call:?") << graph_.dump();
}

TEST_F(DataflowTest, SquareSpellingsReadTheExponentTwo) {
  build("    a = x.square()\n    b = torch.square(x)\n    c = x.pow(2)\n    d = x ** 2\n    return a, b, c, d\n");
  ASSERT_EQ(graph_.returns.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const DataflowOp& op = returned(i);
    EXPECT_EQ(op.name, "pow") << graph_.dump();
    ASSERT_EQ(op.inputs.size(), 2u) << "spelling " << i << ":\n" << graph_.dump();
    EXPECT_EQ(graph_.producer_of(op.inputs[0]).cls, OpClass::Input);
    const DataflowOp& exponent = graph_.producer_of(op.inputs[1]);
    EXPECT_EQ(exponent.cls, OpClass::Constant) << "spelling " << i;
    ASSERT_FALSE(exponent.attrs.empty());
    EXPECT_EQ(exponent.attrs[0], "2") << "spelling " << i;
  }
}

TEST_F(DataflowTest, InPlaceSquareReadsTheExponentTwo) {
  build("    y = x.clone()\n    y.square_()\n    return y\n");
  const DataflowOp& op = returned();
  EXPECT_EQ(op.name, "pow") << graph_.dump();
  EXPECT_TRUE(op.in_place);
  ASSERT_EQ(op.inputs.size(), 2u) << graph_.dump();
  EXPECT_EQ(graph_.producer_of(op.inputs[1]).attrs.at(0), "2");
}

// Writing into a view writes the tensor it views: the name of that tensor
// then holds the written version (a paged cache filled through a flat view).
TEST_F(DataflowTest, WriteIntoAViewIsANewVersionOfItsBase) {
  build("    x.view(-1, 4).index_copy_(0, idx, y)\n    return x\n", "x, idx, y");
  EXPECT_EQ(returned().name, "index_copy") << graph_.dump();
  build("    flat = x.view(-1, 4)\n    flat[idx] = y\n    return x\n", "x, idx, y");
  EXPECT_EQ(returned().name, "setitem") << graph_.dump();
  // An op that is not in place leaves the base as it was.
  build("    z = x.view(-1, 4).index_copy(0, idx, y)\n    return x\n", "x, idx, y");
  EXPECT_EQ(returned().cls, OpClass::Input) << graph_.dump();
}

TEST_F(DataflowTest, CastsAndViewsAreMarked) {
  build("    h = x.float().view(2, -1).transpose(1, 2)\n    y = h.to(torch.bfloat16).type_as(x)\n    return y[..., : 4]\n");
  std::vector<std::string> casts = names(OpClass::Cast);
  std::vector<std::string> expected_casts = {"to", "to", "to"};
  EXPECT_EQ(casts, expected_casts);
  std::vector<std::string> views = names(OpClass::View);
  std::vector<std::string> expected_views = {"view", "transpose"};
  EXPECT_EQ(views, expected_views);
  EXPECT_EQ(returned().name, "getitem");
  EXPECT_EQ(returned().cls, OpClass::Slice);
}

TEST_F(DataflowTest, TupleUnpackingGivesEachNameItsOwnValue) {
  build("    a, b = torch.split(x, 2, dim=-1)\n    return b * a\n");
  const DataflowOp& mul = returned();
  ASSERT_EQ(mul.inputs.size(), 2u);
  EXPECT_EQ(graph_.values[static_cast<size_t>(mul.inputs[0])].name, "b");
  EXPECT_EQ(graph_.values[static_cast<size_t>(mul.inputs[1])].name, "a");
  const DataflowOp& unpack = graph_.producer_of(mul.inputs[0]);
  EXPECT_EQ(unpack.name, "unpack");
  EXPECT_EQ(graph_.producer_of(unpack.inputs[0]).name, "split");
  EXPECT_EQ(graph_.producer_of(unpack.inputs[0]).cls, OpClass::View);
}

TEST_F(DataflowTest, InPlaceOpsMakeANewVersion) {
  build("    y = torch.zeros_like(x)\n    y.add_(x)\n    y += 1\n    return y\n");
  const DataflowOp& last = returned();
  EXPECT_EQ(last.name, "add");
  EXPECT_TRUE(last.in_place);
  const DataflowOp& first = graph_.producer_of(last.inputs[0]);
  EXPECT_EQ(first.name, "add");
  EXPECT_TRUE(first.in_place);
  EXPECT_EQ(graph_.producer_of(first.inputs[0]).name, "zeros_like");
}

TEST_F(DataflowTest, BranchesMergeWithPhiAndKeepTheirCondition) {
  build("    if mask is not None:\n        x = x + mask\n    return F.softmax(x, dim=-1)\n", "x, mask");
  const DataflowOp& softmax = returned();
  EXPECT_EQ(softmax.name, "softmax");
  ASSERT_EQ(softmax.attrs.size(), 2u);
  EXPECT_EQ(softmax.attrs[1], "dim=");
  const DataflowOp& phi = graph_.producer_of(softmax.inputs[0]);
  EXPECT_EQ(phi.name, "phi");
  ASSERT_EQ(phi.inputs.size(), 2u);
  const DataflowOp& add = graph_.producer_of(phi.inputs[0]);
  EXPECT_EQ(add.name, "add");
  EXPECT_EQ(add.condition, "mask is not None");
  // x is read by the add and by the phi (the path that skips the branch).
  EXPECT_EQ(graph_.consumers(add.inputs[0]).size(), 2u);
}

// Code after `if c: return ...` (no else) runs only when c is false, as an
// else arm would: a norm's native-kernel shortcut and its spelled-out form are
// alternatives, and a read on one is no use by the other.
TEST_F(DataflowTest, StatementsAfterAnIfThatReturnsCarryItsNegation) {
  build("    if fast:\n        return F.rms_norm(x, (4,))\n    y = x.float()\n    return y * 2\n", "x, fast");
  auto op_named = [&](const std::string& name) -> const DataflowOp* {
    for (const DataflowOp& op : graph_.ops)
      if (op.name == name) return &op;
    return nullptr;
  };
  ASSERT_NE(op_named("rms_norm"), nullptr);
  EXPECT_EQ(op_named("rms_norm")->condition, "fast");
  ASSERT_NE(op_named("mul"), nullptr);
  EXPECT_EQ(op_named("mul")->condition, "not (fast)");
  EXPECT_EQ(graph_.producer_of(op_named("mul")->inputs[0]).condition, "not (fast)");
}

TEST_F(DataflowTest, AnIndexThatOnlyAddsAxesIsUnsqueeze) {
  build("    a = x[:, None, :]\n    b = x[..., None]\n    c = x[None]\n    d = x[:, None, None]\n    e = x[None, 1]\n"
        "    return a, b, c, d, e\n", "x");
  // (dim, marked as counted from the back of an Ellipsis) per unsqueeze, in order
  std::vector<std::pair<std::string, bool>> seen;
  int getitems = 0;
  for (const DataflowOp& op : graph_.ops) {
    if (op.name == "getitem") ++getitems;
    if (op.name != "unsqueeze") continue;
    const DataflowOp& dim = graph_.producer_of(op.inputs[1]);
    std::string text = dim.name == "neg" ? "-" + graph_.producer_of(dim.inputs[0]).attrs[0] : dim.attrs[0];
    seen.emplace_back(text, op.attrs.size() > 2 && op.attrs[2] == kAfterEllipsis);
  }
  std::vector<std::pair<std::string, bool>> want = {{"1", false}, {"-1", true}, {"0", false}, {"1", false}, {"2", false}};
  EXPECT_EQ(seen, want);
  EXPECT_EQ(getitems, 1);  // x[None, 1] indexes: it keeps its own spelling
}

TEST_F(DataflowTest, CallsOfHelpersAndSubmodulesStayOpaqueButNamed) {
  std::string text =
      "import torch\n"
      "def rotate(t):\n"
      "    return t\n"
      "class A:\n"
      "    def forward(self, x):\n"
      "        q = self.q_proj(x)\n"
      "        e = self.experts[0](q)\n"
      "        return rotate(e) * self.weight\n";
  SourceSet sources = SourceSet::from_texts({{"m.py", text}});
  const ClassDecl* a = sources.find_class("A");
  const auto* forward = ast::as<ast::FunctionDef>(a->node->body[0]);
  FunctionDataflow g = build_dataflow(sources, *a->file, *forward);
  std::vector<std::string> seen;
  for (const DataflowOp& op : g.ops) seen.push_back(op.name);
  std::vector<std::string> expected = {"input", "self.q_proj", "const", "self.experts[]", "call:rotate", "self.weight", "mul"};
  EXPECT_EQ(seen, expected) << g.dump();
}

TEST_F(DataflowTest, TestModelForwardsBuildWithoutUnknownCallees) {
  // The llama-like attention forward: every op is either canonical or a named call.
  std::string path = std::string(NPUFUSE_SOURCE_DIR) + "/tests/models/llama_like/model.py";
  SourceSet sources = SourceSet::load({path});
  const ClassDecl* attn = sources.find_class("LlamaAttention");
  ASSERT_NE(attn, nullptr);
  const ast::FunctionDef* forward = nullptr;
  for (const ast::stmt* s : attn->node->body)
    if (auto* fn = ast::as<ast::FunctionDef>(s); fn && fn->name == "forward") forward = fn;
  ASSERT_NE(forward, nullptr);
  FunctionDataflow g = build_dataflow(sources, *attn->file, *forward);
  int projections = 0, views = 0, calls_unknown = 0;
  for (const DataflowOp& op : g.ops) {
    if (op.cls == OpClass::Module && op.name.find("_proj") != std::string::npos) ++projections;
    if (op.cls == OpClass::View) ++views;
    if (op.name == "call:?") ++calls_unknown;
  }
  EXPECT_EQ(projections, 4);  // q, k, v, o
  EXPECT_GE(views, 6);        // view + transpose for q, k, v
  EXPECT_EQ(calls_unknown, 0);
  EXPECT_EQ(g.returns.size(), 2u);
}

}  // namespace
}  // namespace npufuse::model

namespace npufuse::model {
namespace {

// Every function of every test model builds, and the graph is well formed:
// inputs refer to values produced by earlier ops, each value has one producer.
TEST(DataflowInvariants, AllFunctionsOfAllTestModels) {
  for (const char* name : {"llama_like", "qwen3_like", "qwen3_moe_like", "deepseek_v3_like", "deepseek_v32_like", "vllm_style",
                           "gptj_style", "gemma_style", "gpt_oss_like"}) {
    SCOPED_TRACE(name);
    SourceSet sources = SourceSet::load({std::string(NPUFUSE_SOURCE_DIR) + "/tests/models/" + name + "/model.py"});
    std::vector<const ast::FunctionDef*> functions;
    const ModelFile& file = *sources.files()[0];
    for (const ast::stmt* s : file.parsed->module->body) {
      if (auto* fn = ast::as<ast::FunctionDef>(s)) functions.push_back(fn);
      if (auto* c = ast::as<ast::ClassDef>(s))
        for (const ast::stmt* m : c->body)
          if (auto* fn = ast::as<ast::FunctionDef>(m)) functions.push_back(fn);
    }
    ASSERT_GT(functions.size(), 5u);
    for (const ast::FunctionDef* fn : functions) {
      FunctionDataflow g = build_dataflow(sources, file, *fn);
      for (const DataflowOp& op : g.ops) {
        for (int in : op.inputs) {
          ASSERT_GE(in, 0);
          ASSERT_LT(static_cast<size_t>(in), g.values.size());
          EXPECT_LT(g.values[static_cast<size_t>(in)].producer, op.id) << fn->name << "\n" << g.dump();
        }
        for (int out : op.outputs) EXPECT_EQ(g.values[static_cast<size_t>(out)].producer, op.id);
      }
    }
  }
}

}  // namespace
}  // namespace npufuse::model
