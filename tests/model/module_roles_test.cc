// Roles come from what a class holds and computes, not from its name.
#include "model/module_roles.h"

#include <gtest/gtest.h>

namespace npufuse::model {
namespace {

ModuleRole role_of(const std::string& text, const std::string& cls) {
  SourceSet sources = SourceSet::from_texts({{"m.py", text}});
  ConfigSchema schema = ConfigSchema::discover(sources);
  ModelConfig config;
  Evaluator ev(sources, config, schema);
  RoleTable roles = RoleTable::infer(sources, ev);
  const ClassRole* r = roles.find(cls);
  return r ? r->role : ModuleRole::Unknown;
}

const char* kHeader = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n";

TEST(ModuleRoles, NormsByTheirMathWhateverTheName) {
  std::string rms = std::string(kHeader) +
                    "class Foo(nn.Module):\n"
                    "    def __init__(self, d):\n"
                    "        super().__init__()\n"
                    "        self.weight = nn.Parameter(torch.ones(d))\n"
                    "    def forward(self, x):\n"
                    "        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))\n";
  EXPECT_EQ(role_of(rms, "Foo"), ModuleRole::RMSNorm);
  std::string layer = std::string(kHeader) +
                      "class Bar(nn.Module):\n"
                      "    def __init__(self, d):\n"
                      "        super().__init__()\n"
                      "        self.weight = nn.Parameter(torch.ones(d))\n"
                      "    def forward(self, x):\n"
                      "        x = x - x.mean(-1, keepdim=True)\n"
                      "        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True))\n";
  EXPECT_EQ(role_of(layer, "Bar"), ModuleRole::LayerNorm);
}

TEST(ModuleRoles, LocalLinearFromItsWeightAndFLinear) {
  std::string text = std::string(kHeader) +
                     "class Proj(nn.Module):\n"
                     "    def __init__(self, a, b):\n"
                     "        super().__init__()\n"
                     "        self.weight = nn.Parameter(torch.empty(b, a))\n"
                     "    def forward(self, x):\n"
                     "        return F.linear(x, self.weight)\n"
                     "class Sharded(Proj):\n"
                     "    def __init__(self, a, b):\n"
                     "        super().__init__(a, b // 2)\n";
  EXPECT_EQ(role_of(text, "Proj"), ModuleRole::Linear);
  EXPECT_EQ(role_of(text, "Sharded"), ModuleRole::Linear);
}

TEST(ModuleRoles, MlpRouterMoeAttentionBlock) {
  std::string text = std::string(kHeader) +
                     "class Ffn(nn.Module):\n"
                     "    def __init__(self, d, h):\n"
                     "        super().__init__()\n"
                     "        self.a = nn.Linear(d, h)\n"
                     "        self.b = nn.Linear(h, d)\n"
                     "    def forward(self, x):\n"
                     "        return self.b(F.gelu(self.a(x)))\n"
                     "class Pick(nn.Module):\n"
                     "    def __init__(self, d, e):\n"
                     "        super().__init__()\n"
                     "        self.w = nn.Linear(d, e)\n"
                     "    def forward(self, x):\n"
                     "        return torch.topk(self.w(x).softmax(-1), 2)\n"
                     "class Sparse(nn.Module):\n"
                     "    def __init__(self, d, e):\n"
                     "        super().__init__()\n"
                     "        self.pick = Pick(d, e)\n"
                     "        self.many = nn.ModuleList([Ffn(d, 4 * d) for _ in range(e)])\n"
                     "    def forward(self, x):\n"
                     "        w, i = self.pick(x)\n"
                     "        return x\n"
                     "class Mix(nn.Module):\n"
                     "    def __init__(self, d):\n"
                     "        super().__init__()\n"
                     "        self.q = nn.Linear(d, d)\n"
                     "        self.k = nn.Linear(d, d)\n"
                     "        self.v = nn.Linear(d, d)\n"
                     "    def forward(self, x):\n"
                     "        s = (self.q(x) @ self.k(x).transpose(-1, -2)).softmax(-1)\n"
                     "        return s @ self.v(x)\n"
                     "class Layer(nn.Module):\n"
                     "    def __init__(self, d):\n"
                     "        super().__init__()\n"
                     "        self.one = Mix(d)\n"
                     "        self.two = Sparse(d, 8)\n"
                     "    def forward(self, x):\n"
                     "        return self.two(self.one(x))\n";
  EXPECT_EQ(role_of(text, "Ffn"), ModuleRole::Mlp);
  EXPECT_EQ(role_of(text, "Pick"), ModuleRole::Router);
  EXPECT_EQ(role_of(text, "Sparse"), ModuleRole::MoE);
  EXPECT_EQ(role_of(text, "Mix"), ModuleRole::Attention);
  EXPECT_EQ(role_of(text, "Layer"), ModuleRole::DecoderLayer);
}

TEST(ModuleRoles, NonModuleClassesAreNotModules) {
  std::string text = std::string(kHeader) +
                     "class Cache:\n"
                     "    def update(self, k):\n"
                     "        return k\n";
  SourceSet sources = SourceSet::from_texts({{"m.py", text}});
  ConfigSchema schema = ConfigSchema::discover(sources);
  ModelConfig config;
  Evaluator ev(sources, config, schema);
  RoleTable roles = RoleTable::infer(sources, ev);
  EXPECT_FALSE(roles.is_module("Cache"));
}

}  // namespace
}  // namespace npufuse::model
