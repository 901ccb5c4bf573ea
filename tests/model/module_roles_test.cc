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

// Megatron-style code runs its activation through a torch.autograd.Function:
// `Fn.apply(x)` computes what the Function's static forward does.
TEST(ModuleRoles, ActivationThroughAnAutogradFunction) {
  std::string text = std::string(kHeader) +
                     "def tanh_gelu(x):\n"
                     "    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))\n"
                     "class TanhGelu(torch.autograd.Function):\n"
                     "    @staticmethod\n"
                     "    def forward(ctx, x):\n"
                     "        ctx.save_for_backward(x)\n"
                     "        return tanh_gelu(x)\n"
                     "class Act(nn.Module):\n"
                     "    def forward(self, x):\n"
                     "        return TanhGelu.apply(x)\n"
                     "class Ffn(nn.Module):\n"
                     "    def __init__(self, d):\n"
                     "        super().__init__()\n"
                     "        self.up = nn.Linear(d, 4 * d)\n"
                     "        self.act = Act()\n"
                     "        self.down = nn.Linear(4 * d, d)\n"
                     "    def forward(self, x):\n"
                     "        return self.down(self.act(self.up(x)))\n";
  EXPECT_EQ(role_of(text, "Act"), ModuleRole::Activation);
  EXPECT_EQ(role_of(text, "Ffn"), ModuleRole::Mlp);
}

// DBRX wraps the attention with its two norms in one child: the layer holding
// that child and a feed-forward is a decoder layer.
TEST(ModuleRoles, AttentionInsideANormWrapperMakesALayer) {
  std::string text = std::string(kHeader) +
                     "class Attn(nn.Module):\n"
                     "    def __init__(self, d):\n"
                     "        super().__init__()\n"
                     "        self.qkv = nn.Linear(d, 3 * d)\n"
                     "        self.out = nn.Linear(d, d)\n"
                     "    def forward(self, x):\n"
                     "        q, k, v = self.qkv(x).chunk(3, dim=-1)\n"
                     "        return self.out(torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v)\n"
                     "class NormAttnNorm(nn.Module):\n"
                     "    def __init__(self, d):\n"
                     "        super().__init__()\n"
                     "        self.norm_1 = nn.LayerNorm(d)\n"
                     "        self.attn = Attn(d)\n"
                     "        self.norm_2 = nn.LayerNorm(d)\n"
                     "    def forward(self, x):\n"
                     "        h = x + self.attn(self.norm_1(x))\n"
                     "        return self.norm_2(h), h\n"
                     "class Ffn(nn.Module):\n"
                     "    def __init__(self, d):\n"
                     "        super().__init__()\n"
                     "        self.up = nn.Linear(d, 4 * d)\n"
                     "        self.down = nn.Linear(4 * d, d)\n"
                     "    def forward(self, x):\n"
                     "        return self.down(F.silu(self.up(x)))\n"
                     "class Block(nn.Module):\n"
                     "    def __init__(self, d):\n"
                     "        super().__init__()\n"
                     "        self.norm_attn_norm = NormAttnNorm(d)\n"
                     "        self.ffn = Ffn(d)\n"
                     "    def forward(self, x):\n"
                     "        x, residual = self.norm_attn_norm(x)\n"
                     "        return residual + self.ffn(x)\n";
  EXPECT_EQ(role_of(text, "NormAttnNorm"), ModuleRole::Other);
  EXPECT_EQ(role_of(text, "Block"), ModuleRole::DecoderLayer);
}

// Jamba/Bamba pick the feed-forward's class into a local first
// (`ffn_class = MoE if experts > 1 else MLP`) and build it from there: the
// attribute is that class, one alternative per arm where the config does not
// decide (experts per layer).
TEST(ModuleRoles, FeedForwardClassHeldInALocal) {
  std::string text = std::string(kHeader) +
                     "class Attn(nn.Module):\n"
                     "    def __init__(self, d):\n"
                     "        super().__init__()\n"
                     "        self.qkv = nn.Linear(d, 3 * d)\n"
                     "        self.out = nn.Linear(d, d)\n"
                     "    def forward(self, x):\n"
                     "        q, k, v = self.qkv(x).chunk(3, dim=-1)\n"
                     "        return self.out(torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v)\n"
                     "class Ffn(nn.Module):\n"
                     "    def __init__(self, d):\n"
                     "        super().__init__()\n"
                     "        self.up = nn.Linear(d, 4 * d)\n"
                     "        self.down = nn.Linear(4 * d, d)\n"
                     "    def forward(self, x):\n"
                     "        return self.down(F.silu(self.up(x)))\n"
                     "class Fixed(nn.Module):\n"
                     "    def __init__(self, d):\n"
                     "        super().__init__()\n"
                     "        n = 1\n"
                     "        ffn_class = Ffn if n == 1 else None\n"
                     "        self.attn = Attn(d)\n"
                     "        self.ffn = ffn_class(d)\n"
                     "    def forward(self, x):\n"
                     "        x = x + self.attn(x)\n"
                     "        return x + self.ffn(x)\n"
                     "class PerLayer(nn.Module):\n"
                     "    def __init__(self, config, i):\n"
                     "        super().__init__()\n"
                     "        ffn_class = Ffn if config.dense[i] else Attn\n"
                     "        self.attn = Attn(config.d)\n"
                     "        self.ffn = ffn_class(config.d)\n"
                     "    def forward(self, x):\n"
                     "        x = x + self.attn(x)\n"
                     "        return x + self.ffn(x)\n";
  EXPECT_EQ(role_of(text, "Fixed"), ModuleRole::DecoderLayer);
  EXPECT_EQ(role_of(text, "PerLayer"), ModuleRole::DecoderLayer);
}

// Mamba's block is a norm and a mixer with no feed-forward: the mixer's
// projections and its convolution over the sequence put it in the attention's
// place (whatever else it looks up), and the block is a decoder layer.
TEST(ModuleRoles, NormAndConvolutionMixerMakeALayer) {
  std::string text = std::string(kHeader) +
                     "class Mixer(nn.Module):\n"
                     "    def __init__(self, d, inner, k):\n"
                     "        super().__init__()\n"
                     "        self.in_proj = nn.Linear(d, 2 * inner, bias=False)\n"
                     "        self.conv1d = nn.Conv1d(inner, inner, kernel_size=k, groups=inner, padding=k - 1)\n"
                     "        self.A_log = nn.Parameter(torch.zeros(inner, 16))\n"
                     "        self.out_proj = nn.Linear(inner, d, bias=False)\n"
                     "    def forward(self, x):\n"
                     "        h, z = self.in_proj(x).chunk(2, dim=-1)\n"
                     "        h = F.silu(self.conv1d(h.transpose(1, 2))[..., : x.shape[1]]).transpose(1, 2)\n"
                     "        h = h * torch.exp(-torch.exp(self.A_log)).mean(-1)\n"
                     "        return self.out_proj(h * F.silu(z))\n"
                     "class Norm(nn.Module):\n"
                     "    def __init__(self, d):\n"
                     "        super().__init__()\n"
                     "        self.weight = nn.Parameter(torch.ones(d))\n"
                     "    def forward(self, x):\n"
                     "        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)\n"
                     "class Block(nn.Module):\n"
                     "    def __init__(self, d):\n"
                     "        super().__init__()\n"
                     "        self.norm = Norm(d)\n"
                     "        self.mixer = Mixer(d, 2 * d, 4)\n"
                     "    def forward(self, x):\n"
                     "        return x + self.mixer(self.norm(x))\n";
  EXPECT_EQ(role_of(text, "Mixer"), ModuleRole::Attention);
  EXPECT_EQ(role_of(text, "Block"), ModuleRole::DecoderLayer);
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

// LongCat-Flash's layer: two attention sublayers in a short list, a
// feed-forward child and norms; DBRX's feed-forward: experts whose weights are
// flattened to [E * I, H], chosen by the module's own softmax and top-k.
TEST(ModuleRoles, AttentionListLayerAndFlattenedExperts) {
  std::string text = std::string(kHeader) +
                     "class Attn(nn.Module):\n"
                     "    def __init__(self, d):\n"
                     "        super().__init__()\n"
                     "        self.qkv = nn.Linear(d, 3 * d)\n"
                     "        self.out = nn.Linear(d, d)\n"
                     "    def forward(self, x):\n"
                     "        q, k, v = self.qkv(x).chunk(3, dim=-1)\n"
                     "        return self.out(torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v)\n"
                     "class Ffn(nn.Module):\n"
                     "    def __init__(self, d):\n"
                     "        super().__init__()\n"
                     "        self.up = nn.Linear(d, 4 * d)\n"
                     "        self.down = nn.Linear(4 * d, d)\n"
                     "    def forward(self, x):\n"
                     "        return self.down(F.silu(self.up(x)))\n"
                     "class DualLayer(nn.Module):\n"
                     "    def __init__(self, d):\n"
                     "        super().__init__()\n"
                     "        self.attn = nn.ModuleList([Attn(d) for _ in [0, 1]])\n"
                     "        self.norms = nn.ModuleList([nn.LayerNorm(d) for _ in [0, 1]])\n"
                     "        self.ffn = Ffn(d)\n"
                     "    def forward(self, x):\n"
                     "        x = x + self.attn[0](self.norms[0](x))\n"
                     "        x = x + self.attn[1](self.norms[1](x))\n"
                     "        return x + self.ffn(x)\n"
                     "class FlatExperts(nn.Module):\n"
                     "    def __init__(self, config):\n"
                     "        super().__init__()\n"
                     "        self.w1 = nn.Parameter(torch.empty(config.num_experts * config.ffn, config.d))\n"
                     "        self.w2 = nn.Parameter(torch.empty(config.num_experts * config.ffn, config.d))\n"
                     "    def forward(self, x, w1, w2):\n"
                     "        return F.silu(x.matmul(w1.T)).matmul(w2)\n"
                     "class Scores(nn.Module):\n"
                     "    def __init__(self, config):\n"
                     "        super().__init__()\n"
                     "        self.layer = nn.Linear(config.d, config.num_experts, bias=False)\n"
                     "    def forward(self, x):\n"
                     "        return self.layer(x)\n"
                     "class SparseFfn(nn.Module):\n"
                     "    def __init__(self, config):\n"
                     "        super().__init__()\n"
                     "        self.router = Scores(config)\n"
                     "        self.experts = FlatExperts(config)\n"
                     "    def forward(self, x):\n"
                     "        w, idx = torch.topk(torch.softmax(self.router(x), dim=-1), 2, dim=-1)\n"
                     "        return self.experts(x, w, idx)\n";
  EXPECT_EQ(role_of(text, "DualLayer"), ModuleRole::DecoderLayer);
  EXPECT_EQ(role_of(text, "FlatExperts"), ModuleRole::Mlp);
  EXPECT_EQ(role_of(text, "SparseFfn"), ModuleRole::MoE);
}

}  // namespace
}  // namespace npufuse::model
