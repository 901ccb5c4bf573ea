// Sub-chains of small models written for one coding form each: the form is
// what the finder must see through, whatever the names. Each model is a whole
// decoder (embedding -> blocks -> norm -> head) so the inventory finds the
// block the way it does on a real file.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>

#include "model/inventory.h"
#include "model/module_roles.h"

namespace npufuse::model {
namespace {

struct Built {
  SourceSet sources;
  ModelConfig config;
  Inventory inv;
};

std::unique_ptr<Built> build(const std::string& text, nlohmann::json config = nullptr) {
  auto b = std::make_unique<Built>(Built{SourceSet::from_texts({{"m.py", text}}), ModelConfig(), {}});
  if (!config.is_null()) b->config = ModelConfig::from_json(config, "config.json");
  b->inv = build_inventory(b->sources, b->config);
  return b;
}

const ModuleChain* chain(const Inventory& inv, const std::string& module) {
  for (const BlockChains& b : inv.chains)
    for (const ModuleChain& m : b.modules)
      if (m.module == module) return &m;
  return nullptr;
}

std::vector<const SubChainStep*> steps(const ModuleChain& m, const std::string& kind) {
  std::vector<const SubChainStep*> out;
  for (const SubChainStep& s : m.steps)
    if (s.kind == kind) out.push_back(&s);
  return out;
}

bool covers(const SubChainStep& s, int line) {
  return std::any_of(s.spans.begin(), s.spans.end(), [&](const SourceSpan& sp) { return sp.line <= line && line <= std::max(sp.line, sp.end_line); });
}

std::string kinds(const ModuleChain& m) {
  std::string out;
  for (const SubChainStep& s : m.steps) out += s.kind + " ";
  return out + "| missing: " + [&] {
    std::string x;
    for (const std::string& k : m.missing) x += k + " ";
    return x;
  }();
}

// The decoder around a block class named Block (blocks get `x` only).
const char* kDecoder = R"(
class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([Block(config) for _ in range(config.num_hidden_layers)])
        self.norm = nn.LayerNorm(config.hidden_size)
        self.head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))
)";

const char* kAttention = R"(
class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n = config.num_attention_heads
        self.d = config.hidden_size // config.num_attention_heads
        self.q = nn.Linear(config.hidden_size, config.hidden_size)
        self.k = nn.Linear(config.hidden_size, config.hidden_size)
        self.v = nn.Linear(config.hidden_size, config.hidden_size)
        self.o = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.n, self.d).transpose(1, 2)
        k = self.k(x).view(b, s, self.n, self.d).transpose(1, 2)
        v = self.v(x).view(b, s, self.n, self.d).transpose(1, 2)
        p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.d), dim=-1)
        return self.o((p @ v).transpose(1, 2).reshape(b, s, -1))

class Mlp(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.up = nn.Linear(config.hidden_size, config.intermediate_size)
        self.down = nn.Linear(config.intermediate_size, config.hidden_size)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))
)";

std::string model(const std::string& body) {
  return std::string("import math\nimport torch\nimport torch.nn.functional as F\nfrom torch import nn\n") + kAttention + body +
         kDecoder;
}

TEST(SubChainForms, NormWrittenAsOneOverSqrtIsTheInputNorm) {
  auto b = build(model(R"(
class ScaleNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        inv = 1.0 / torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)
        return x * inv * self.weight

class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.pre = ScaleNorm(config.hidden_size)
        self.attn = Attention(config)
        self.post = ScaleNorm(config.hidden_size)
        self.mlp = Mlp(config)

    def forward(self, x):
        x = x + self.attn(self.pre(x))
        return x + self.mlp(self.post(x))
)"));
  const ModuleChain* attn = chain(b->inv, "attention");
  ASSERT_NE(attn, nullptr);
  EXPECT_EQ(steps(*attn, "input_norm").size(), 1u) << kinds(*attn);
  const ModuleChain* ffn = chain(b->inv, "ffn");
  ASSERT_NE(ffn, nullptr);
  EXPECT_EQ(steps(*ffn, "post_norm").size(), 1u) << kinds(*ffn);
  EXPECT_EQ(attn->layout.layout, "BNSD") << attn->layout.evidence;
}

TEST(SubChainForms, ParallelResidualIsTheResidualAddOfBothModules) {
  auto b = build(model(R"(
class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln = nn.LayerNorm(config.hidden_size)
        self.attn = Attention(config)
        self.mlp = Mlp(config)

    def forward(self, x):
        h = self.ln(x)
        return self.attn(h) + self.mlp(h) + x
)"));
  const ModuleChain* attn = chain(b->inv, "attention");
  const ModuleChain* ffn = chain(b->inv, "ffn");
  ASSERT_NE(attn, nullptr);
  ASSERT_NE(ffn, nullptr);
  ASSERT_EQ(steps(*attn, "residual_add").size(), 1u) << kinds(*attn);
  ASSERT_EQ(steps(*ffn, "residual_add").size(), 1u) << kinds(*ffn);
  // The sum of the two module outputs is not a residual add; the add of the stream is.
  EXPECT_NE(steps(*ffn, "residual_add")[0]->detail.find("parallel"), std::string::npos);
}

TEST(SubChainForms, ResidualCarriedToTheNextBlockIsNamed) {
  auto b = build(model(R"(
class AddNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x, residual=None):
        if residual is not None:
            x = x + residual
            residual = x
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight
        return x if residual is None else (x, residual)

class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.pre = AddNorm(config.hidden_size)
        self.attn = Attention(config)
        self.post = AddNorm(config.hidden_size)
        self.mlp = Mlp(config)

    def forward(self, x, residual):
        x, residual = self.pre(x, residual)
        x = self.attn(x)
        x, residual = self.post(x, residual)
        return self.mlp(x), residual
)"));
  const ModuleChain* ffn = chain(b->inv, "ffn");
  ASSERT_NE(ffn, nullptr);
  auto adds = steps(*ffn, "residual_add");
  ASSERT_EQ(adds.size(), 1u) << kinds(*ffn);
  EXPECT_NE(adds[0]->detail.find("next block"), std::string::npos) << adds[0]->detail;
  const ModuleChain* attn = chain(b->inv, "attention");
  ASSERT_NE(attn, nullptr);
  EXPECT_EQ(steps(*attn, "residual_add").size(), 1u) << kinds(*attn);
}

const char* kRmsNorm = R"(
class RmsNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)
)";

// What reads each residual add's sum: the norm after it in the block, or,
// for the add the block returns, the norm its first input meets in the next layer.
TEST(SubChainForms, ResidualSumReaders) {
  auto pre = build(model(std::string(kRmsNorm) + R"(
class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.pre = RmsNorm(config.hidden_size)
        self.attn = Attention(config)
        self.post = RmsNorm(config.hidden_size)
        self.mlp = Mlp(config)

    def forward(self, x):
        x = x + self.attn(self.pre(x))
        return x + self.mlp(self.post(x))
)"));
  for (const char* module : {"attention", "ffn"}) {
    const ModuleChain* m = chain(pre->inv, module);
    ASSERT_NE(m, nullptr) << module;
    ASSERT_EQ(steps(*m, "residual_add").size(), 1u) << kinds(*m);
    EXPECT_EQ(steps(*m, "residual_add")[0]->sum_read_by, "rms_norm") << module;
  }

  // Post-norm (OLMo-2 style): each branch is normalised before its add; no norm reads a sum.
  auto post = build(model(std::string(kRmsNorm) + R"(
class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attn = Attention(config)
        self.attn_out_norm = RmsNorm(config.hidden_size)
        self.mlp = Mlp(config)
        self.mlp_out_norm = RmsNorm(config.hidden_size)

    def forward(self, x):
        x = x + self.attn_out_norm(self.attn(x))
        return x + self.mlp_out_norm(self.mlp(x))
)"));
  for (const char* module : {"attention", "ffn"}) {
    const ModuleChain* m = chain(post->inv, module);
    ASSERT_NE(m, nullptr) << module;
    ASSERT_EQ(steps(*m, "residual_add").size(), 1u) << kinds(*m);
    EXPECT_EQ(steps(*m, "residual_add")[0]->sum_read_by, "none") << module;
  }

  auto layer_norm = build(model(R"(
class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.hidden_size)
        self.attn = Attention(config)
        self.ln_2 = nn.LayerNorm(config.hidden_size)
        self.mlp = Mlp(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))
)"));
  const ModuleChain* ffn = chain(layer_norm->inv, "ffn");
  ASSERT_NE(ffn, nullptr);
  ASSERT_EQ(steps(*ffn, "residual_add").size(), 1u) << kinds(*ffn);
  EXPECT_EQ(steps(*ffn, "residual_add")[0]->sum_read_by, "layer_norm");
}

// `routed + self.shared(x)` joins a branch to the module's output, not the
// stream: no residual add, also where the config leaves the branch's module unbuilt.
TEST(SubChainForms, SharedBranchSumIsNoResidualAdd) {
  auto b = build(model(R"(
class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.pre = nn.LayerNorm(config.hidden_size)
        self.attn = Attention(config)
        self.post = nn.LayerNorm(config.hidden_size)
        self.mlp = Mlp(config)
        self.side = None if config.shared_width == 0 else Mlp(config)

    def forward(self, x):
        x = x + self.attn(self.pre(x))
        h = self.post(x)
        if self.side is None:
            out = self.mlp(h)
        else:
            out = self.mlp(h) + self.side(h)
        return x + out
)"), nlohmann::json{{"hidden_size", 64}, {"intermediate_size", 256}, {"num_attention_heads", 4},
                     {"num_hidden_layers", 2}, {"vocab_size", 100}, {"shared_width", 0}});
  const ModuleChain* ffn = chain(b->inv, "ffn");
  ASSERT_NE(ffn, nullptr);
  auto adds = steps(*ffn, "residual_add");
  ASSERT_EQ(adds.size(), 1u) << kinds(*ffn);
}

// A class picked from a table of classes by `config._attn_implementation`
// ("eager" when the config leaves it unset) behind a wrapper holding only it,
// and an MLP whose activation comes from get_activation(name).
// A mixer in the attention's place that runs a depthwise causal conv1d and
// then a recurrence, with no softmax over scores: a linear-attention or
// state-space mixer. Its steps are the conv1d and the recurrence, named from
// what the code calls, never an attention core, a K/V cache or RoPE. The
// models are the plan tests' (tests/plan/data/linear_mixer): a gated delta
// rule, and the same mixer with a state-space decay and a plain scan helper.
std::unique_ptr<Built> build_mixer(const std::string& file) {
  const std::string dir = std::string(NPUFUSE_SOURCE_DIR) + "/tests/plan/data/linear_mixer/";
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  return build(read(dir + file), nlohmann::json::parse(read(dir + "config.json")));
}

TEST(SubChainForms, ConvolutionAndRecurrenceMakeALinearMixer) {
  auto b = build_mixer("delta_mixer.py");
  EXPECT_EQ(chain(b->inv, "attention"), nullptr);
  const ModuleChain* mixer = chain(b->inv, "linear_attention");
  ASSERT_NE(mixer, nullptr);
  EXPECT_EQ(steps(*mixer, "conv1d").size(), 1u) << kinds(*mixer);
  std::vector<const SubChainStep*> recurrence = steps(*mixer, "recurrence");
  ASSERT_EQ(recurrence.size(), 1u) << kinds(*mixer);
  EXPECT_EQ(recurrence[0]->detail, "gated delta rule");
  EXPECT_EQ(steps(*mixer, "input_norm").size(), 1u) << kinds(*mixer);
  for (const char* kind : {"attention_core", "cache_write", "rope"}) EXPECT_TRUE(steps(*mixer, kind).empty()) << kind;

  auto c = build_mixer("ssm_mixer.py");
  const ModuleChain* scan = chain(c->inv, "linear_attention");
  ASSERT_NE(scan, nullptr);
  recurrence = steps(*scan, "recurrence");
  ASSERT_EQ(recurrence.size(), 1u) << kinds(*scan);
  EXPECT_EQ(recurrence[0]->detail, "selective state-space scan");
}

TEST(SubChainForms, AttentionFromAClassTableBehindAWrapper) {
  auto b = build(std::string("import math\nimport torch\nimport torch.nn.functional as F\nfrom torch import nn\n"
                             "from transformers.activations import get_activation\n") +
                 kAttention + R"(
class FlashAttention(Attention):
    pass

ATTENTION_CLASSES = {"eager": Attention, "flash_attention_2": FlashAttention}

class AttentionWrapper(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.inner = ATTENTION_CLASSES[config._attn_implementation](config)

    def forward(self, x):
        return self.inner(x)

class NamedActMlp(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.fc_in = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = get_activation(config.activation)
        self.fc_out = nn.Linear(config.intermediate_size, config.hidden_size)

    def forward(self, x):
        return self.fc_out(self.act(self.fc_in(x)))

class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.hidden_size)
        self.attn = AttentionWrapper(config)
        self.ln_2 = nn.LayerNorm(config.hidden_size)
        self.mlp = NamedActMlp(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))
)" + kDecoder,
                 nlohmann::json{{"hidden_size", 64}, {"intermediate_size", 256}, {"num_attention_heads", 4},
                                {"num_hidden_layers", 2}, {"vocab_size", 100}, {"activation", "gelu"}});
  EXPECT_NE(chain(b->inv, "attention"), nullptr);
  const ModuleChain* ffn = chain(b->inv, "ffn");
  ASSERT_NE(ffn, nullptr);
  EXPECT_EQ(steps(*ffn, "activation").size(), 1u) << kinds(*ffn);
}

const char* kRouter = R"(
class Router(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.top_k = config.num_experts_per_tok
        self.weight = nn.Parameter(torch.empty(config.num_experts, config.hidden_size))

    def forward(self, x):
        logits = F.linear(x, self.weight)
        w, idx = torch.topk(logits.softmax(dim=-1), self.top_k, dim=-1)
        return w, idx

class Expert(nn.Module):
    def __init__(self, dim, inter):
        super().__init__()
        self.w1 = nn.Linear(dim, inter, bias=False)
        self.w2 = nn.Linear(inter, dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)))
)";

const char* kMoeBlock = R"(
class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.pre = nn.LayerNorm(config.hidden_size)
        self.attn = Attention(config)
        self.post = nn.LayerNorm(config.hidden_size)
        self.moe = Moe(config)

    def forward(self, x):
        x = x + self.attn(self.pre(x))
        return x + self.moe(self.post(x))
)";

TEST(SubChainForms, ExpertsAppendedToALocalListAreInlined) {
  auto b = build(model(std::string(kRouter) + R"(
class Moe(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.router = Router(config)
        experts = []
        for e in range(config.num_experts):
            experts.append(Expert(config.hidden_size, config.intermediate_size))
        self.experts = nn.ModuleList(experts)

    def forward(self, x):
        w, idx = self.router(x)
        out = torch.zeros_like(x)
        for e in range(len(self.experts)):
            tok, slot = torch.where(idx == e)
            out[tok] += self.experts[e](x[tok]) * w[tok, slot, None]
        return out
)" + kMoeBlock),
                 {{"num_experts", 4}, {"hidden_size", 8}, {"intermediate_size", 16}, {"num_attention_heads", 2}});
  const ModuleChain* moe = chain(b->inv, "moe");
  ASSERT_NE(moe, nullptr);
  auto experts = steps(*moe, "experts");
  ASSERT_EQ(experts.size(), 1u) << kinds(*moe);
  EXPECT_NE(experts[0]->detail.find("2 matmul(s) per expert"), std::string::npos) << experts[0]->detail;
  EXPECT_EQ(steps(*moe, "combine").size(), 1u) << kinds(*moe);
  // The module list's element is the appended class, counted from the loop.
  const ClassSummary* cls = nullptr;
  for (const ClassSummary& c : b->inv.classes)
    if (c.cls->node->name == "Moe") cls = &c;
  ASSERT_NE(cls, nullptr);
  bool listed = false;
  for (const Attribute& a : cls->attributes)
    if (a.name == "experts") listed = a.module.written == "Expert" && a.count.integer() == 4;
  EXPECT_TRUE(listed);
}

TEST(SubChainForms, ExpertMatmulsInExclusiveArmsOfAHelperCountOnce) {
  // Each projection goes through a helper with a quantised and a plain GEMM
  // (DeepSeek's reference `linear`): both arms are in the graph, one runs.
  auto b = build(model(std::string(kRouter) + R"(
def project(x, layer):
    if layer.weight.element_size() == 1:
        return quant_gemm(x, layer.weight, layer.scale)
    elif layer.upcast:
        return F.linear(x.float(), layer.weight.float())
    else:
        return F.linear(x, layer.weight)

class GatedExpert(nn.Module):
    def __init__(self, dim, inter):
        super().__init__()
        self.w1 = nn.Linear(dim, inter, bias=False)
        self.w2 = nn.Linear(inter, dim, bias=False)
        self.w3 = nn.Linear(dim, inter, bias=False)

    def forward(self, x):
        return project(F.silu(project(x, self.w1)) * project(x, self.w3), self.w2)

class Moe(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.router = Router(config)
        self.experts = nn.ModuleList([GatedExpert(config.hidden_size, config.intermediate_size) for _ in range(config.num_experts)])

    def forward(self, x):
        w, idx = self.router(x)
        out = torch.zeros_like(x)
        for e in range(len(self.experts)):
            tok, slot = torch.where(idx == e)
            out[tok] += self.experts[e](x[tok]) * w[tok, slot, None]
        return out
)" + kMoeBlock),
                 {{"num_experts", 4}, {"hidden_size", 8}, {"intermediate_size", 16}, {"num_attention_heads", 2}});
  const ModuleChain* moe = chain(b->inv, "moe");
  ASSERT_NE(moe, nullptr);
  auto experts = steps(*moe, "experts");
  ASSERT_EQ(experts.size(), 1u) << kinds(*moe);
  EXPECT_NE(experts[0]->detail.find("3 matmul(s) per expert"), std::string::npos) << experts[0]->detail;
}

TEST(SubChainForms, ExpertOutputsCollectedByAppendReachTheCombine) {
  auto b = build(model(std::string(kRouter) + R"(
class Moe(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.router = Router(config)
        self.experts = nn.ModuleList([Expert(config.hidden_size, config.intermediate_size) for _ in range(config.num_experts)])

    def forward(self, x):
        w, idx = self.router(x)
        order = idx.view(-1).argsort()
        counts = torch.bincount(idx.view(-1)).tolist()
        rows = x[order // idx.shape[1]]
        outs = []
        start = 0
        for e, n in enumerate(counts):
            outs.append(self.experts[e](rows[start : start + n]))
            start += n
        stacked = torch.cat(outs, dim=0)
        back = torch.empty_like(stacked)
        back[order] = stacked
        return (back.view(*idx.shape, -1) * w.unsqueeze(-1)).sum(dim=1)
)" + kMoeBlock));
  const ModuleChain* moe = chain(b->inv, "moe");
  ASSERT_NE(moe, nullptr);
  EXPECT_EQ(steps(*moe, "experts").size(), 1u) << kinds(*moe);
  ASSERT_EQ(steps(*moe, "combine").size(), 1u) << kinds(*moe);
  EXPECT_TRUE(moe->missing.empty()) << kinds(*moe);
}

TEST(SubChainForms, DenseRoutingExpertsDispatchAndCombine) {
  auto b = build(model(std::string(R"(
class Router(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.top_k = config.num_experts_per_tok
        self.weight = nn.Parameter(torch.empty(config.num_experts, config.hidden_size))

    def forward(self, x):
        logits = F.linear(x, self.weight)
        w, idx = torch.topk(logits, self.top_k, dim=-1)
        w = F.softmax(w, dim=-1)
        return torch.zeros_like(logits).scatter_(1, idx, w)

class StackedExperts(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n = config.num_experts
        self.up = nn.Parameter(torch.empty(config.num_experts, config.hidden_size, config.intermediate_size))
        self.down = nn.Parameter(torch.empty(config.num_experts, config.intermediate_size, config.hidden_size))

    def forward(self, x, routing):
        every = x.unsqueeze(0).expand(self.n, -1, -1)
        y = torch.bmm(F.silu(torch.bmm(every, self.up)), self.down)
        return (y * routing.transpose(0, 1).unsqueeze(-1)).sum(dim=0)

class Moe(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.router = Router(config)
        self.experts = StackedExperts(config)

    def forward(self, x):
        return self.experts(x, self.router(x))
)") + kMoeBlock));
  const ModuleChain* moe = chain(b->inv, "moe");
  ASSERT_NE(moe, nullptr);
  EXPECT_TRUE(moe->missing.empty()) << kinds(*moe);
  EXPECT_TRUE(steps(*moe, "shared_expert").empty()) << kinds(*moe);
  ASSERT_EQ(steps(*moe, "dispatch").size(), 1u) << kinds(*moe);
  EXPECT_NE(steps(*moe, "dispatch")[0]->detail.find("dense"), std::string::npos);
  ASSERT_EQ(steps(*moe, "combine").size(), 1u) << kinds(*moe);
}

// 1-based line of the first line of `text` that contains `needle`.
int line_of(const std::string& text, const std::string& needle) {
  size_t at = text.find(needle);
  return at == std::string::npos ? -1 : 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

TEST(SubChainForms, RopeTablesComputedByAMatmulAreNotTheScores) {
  std::string text = model(R"(
class Rotary(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim)))

    def forward(self, x, pos):
        f = (self.inv_freq[:, None] @ pos[None, :].float()).transpose(0, 1)
        e = torch.cat((f, f), dim=-1)
        return e.cos(), e.sin()

def rotate(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)

class RopeAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n = config.num_attention_heads
        self.d = config.hidden_size // config.num_attention_heads
        self.rotary = Rotary(self.d)
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size)
        self.o = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, x, pos):
        b, s, _ = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.n, self.d).unbind(2)
        cos, sin = self.rotary(x, pos)
        q = q * cos + rotate(q) * sin
        k = k * cos + rotate(k) * sin
        p = torch.softmax(torch.einsum("bqhd,bkhd->bhqk", q, k), dim=-1)
        return self.o(torch.einsum("bhqk,bkhd->bqhd", p, v).reshape(b, s, -1))

class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.pre = nn.LayerNorm(config.hidden_size)
        self.attn = RopeAttention(config)
        self.post = nn.LayerNorm(config.hidden_size)
        self.mlp = Mlp(config)

    def forward(self, x, pos):
        x = x + self.attn(self.pre(x), pos)
        return x + self.mlp(self.post(x))
)");
  auto b = build(text);
  const ModuleChain* attn = chain(b->inv, "attention");
  ASSERT_NE(attn, nullptr);
  ASSERT_EQ(steps(*attn, "rope").size(), 1u) << kinds(*attn);
  auto core = steps(*attn, "attention_core");
  ASSERT_EQ(core.size(), 1u) << kinds(*attn);
  // The rotary table's matmul is no score product; the einsum is.
  EXPECT_FALSE(covers(*core[0], line_of(text, "self.inv_freq[:, None] @")));
  EXPECT_TRUE(covers(*core[0], line_of(text, "bqhd,bkhd->bhqk")));
  EXPECT_TRUE(covers(*steps(*attn, "rope")[0], line_of(text, "q = q * cos")));
}

}  // namespace
}  // namespace npufuse::model

namespace npufuse::model {
namespace {

// An encoder-style attention that scales q by a stored factor right after its
// projection (CLIP, wav2vec2, BART): one product with an outside factor is a
// scale, not a rotation, so no RoPE step is reported.
TEST(SubChainForms, QueryScaledByAnAttributeIsNoRope) {
  auto b = build(model(R"(
class ScaledAttention(Attention):
    def __init__(self, config):
        super().__init__(config)
        self.scaling = self.d ** -0.5

    def forward(self, x):
        b, s, _ = x.shape
        q = (self.q(x) * self.scaling).view(b, s, self.n, self.d).transpose(1, 2)
        k = self.k(x).view(b, s, self.n, self.d).transpose(1, 2)
        v = self.v(x).view(b, s, self.n, self.d).transpose(1, 2)
        p = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
        return self.o((p @ v).transpose(1, 2).reshape(b, s, -1))

class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.pre = nn.LayerNorm(config.hidden_size)
        self.attn = ScaledAttention(config)
        self.post = nn.LayerNorm(config.hidden_size)
        self.mlp = Mlp(config)

    def forward(self, x):
        x = x + self.attn(self.pre(x))
        return x + self.mlp(self.post(x))
)"));
  const ModuleChain* attn = chain(b->inv, "attention");
  ASSERT_NE(attn, nullptr);
  EXPECT_TRUE(steps(*attn, "rope").empty()) << kinds(*attn);
  EXPECT_EQ(steps(*attn, "attention_core").size(), 1u) << kinds(*attn);
}

// HF 5 picks the attention function with `TABLE.get_interface(key, default)`
// (the table imported, so only the default is in the files): the default
// is the attention core, inlined into the attention module.
TEST(SubChainForms, AttentionPickedByGetInterfaceInlinesItsDefault) {
  auto b = build(std::string(R"(import torch
import torch.nn.functional as F
from torch import nn
from ...modeling_utils import ALL_ATTENTION_FUNCTIONS

def eager_attention_forward(module, query, key, value, attention_mask, scaling, **kwargs):
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        scores = scores + attention_mask
    probs = F.softmax(scores, dim=-1)
    return torch.matmul(probs, value).transpose(1, 2), probs

class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(config.hidden_size, config.hidden_size)
        self.k_proj = nn.Linear(config.hidden_size, config.hidden_size)
        self.v_proj = nn.Linear(config.hidden_size, config.hidden_size)
        self.o_proj = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states, attention_mask=None):
        shape = (*hidden_states.shape[:-1], -1, self.head_dim)
        q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        attention_interface = ALL_ATTENTION_FUNCTIONS.get_interface(self.config._attn_implementation, eager_attention_forward)
        out, weights = attention_interface(self, q, k, v, attention_mask, scaling=self.scaling)
        return self.o_proj(out.reshape(*hidden_states.shape[:-1], -1)), weights

class Mlp(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.up = nn.Linear(config.hidden_size, config.intermediate_size)
        self.down = nn.Linear(config.intermediate_size, config.hidden_size)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))

class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.hidden_size)
        self.attn = Attention(config)
        self.ln2 = nn.LayerNorm(config.hidden_size)
        self.mlp = Mlp(config)

    def forward(self, x):
        h, _ = self.attn(self.ln1(x))
        x = x + h
        return x + self.mlp(self.ln2(x))
)") + kDecoder);
  const ModuleChain* attn = chain(b->inv, "attention");
  ASSERT_NE(attn, nullptr) << "the attention module is not recognised through get_interface";
  ASSERT_EQ(steps(*attn, "attention_core").size(), 1u) << kinds(*attn);
  EXPECT_TRUE(covers(*steps(*attn, "attention_core")[0], 10)) << "the softmax of eager_attention_forward";
  ASSERT_NE(chain(b->inv, "ffn"), nullptr);
}

// Experts stored as two 3-D parameters and applied per expert with
// F.linear on one expert's slice (HF 5's Mixtral): a stacked-experts module,
// so the block with a router is a MoE.
TEST(SubChainForms, StackedExpertsAppliedWithLinearAreTheExperts) {
  auto b = build(model(R"(
class Experts(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_experts = config.num_local_experts
        self.gate_up_proj = nn.Parameter(torch.empty(self.num_experts, 2 * config.intermediate_size, config.hidden_size))
        self.down_proj = nn.Parameter(torch.empty(self.num_experts, config.hidden_size, config.intermediate_size))

    def forward(self, hidden_states, top_k_index, top_k_weights):
        out = torch.zeros_like(hidden_states)
        expert_mask = F.one_hot(top_k_index, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in range(self.num_experts):
            top_k_pos, token_idx = torch.where(expert_mask[expert_idx])
            gate, up = F.linear(hidden_states[token_idx], self.gate_up_proj[expert_idx]).chunk(2, dim=-1)
            y = F.linear(F.silu(gate) * up, self.down_proj[expert_idx])
            out.index_add_(0, token_idx, y * top_k_weights[token_idx, top_k_pos, None])
        return out

class Router(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.top_k = config.num_experts_per_tok
        self.weight = nn.Parameter(torch.empty(config.num_local_experts, config.hidden_size))

    def forward(self, x):
        probs = F.softmax(F.linear(x, self.weight), dim=-1)
        values, indices = torch.topk(probs, self.top_k, dim=-1)
        return values / values.sum(dim=-1, keepdim=True), indices

class Moe(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate = Router(config)
        self.experts = Experts(config)

    def forward(self, x):
        weights, indices = self.gate(x)
        return self.experts(x, indices, weights)

class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.pre = nn.LayerNorm(config.hidden_size)
        self.attn = Attention(config)
        self.post = nn.LayerNorm(config.hidden_size)
        self.moe = Moe(config)

    def forward(self, x):
        x = x + self.attn(self.pre(x))
        return x + self.moe(self.post(x))
)"));
  const ModuleChain* moe = chain(b->inv, "moe");
  ASSERT_NE(moe, nullptr) << "the stacked experts are not recognised";
  EXPECT_EQ(steps(*moe, "gate").size(), 1u) << kinds(*moe);
  EXPECT_EQ(steps(*moe, "experts").size(), 1u) << kinds(*moe);
}

// GPT-2 / OPT style, written from scratch: projections are HF's Conv1D
// (`Conv1D(nf, nx)`: nx in, nf out), the layer holds its feed-forward's two
// linears itself (no MLP child), and the file also defines a classification
// head beside the causal LM; the config's `architectures` names the root.
TEST(SubChainForms, Conv1DProjectionsInlineFeedForwardAndTheNamedRoot) {
  std::string text = R"(import torch
import torch.nn.functional as F
from torch import nn
from ...pytorch_utils import Conv1D

class SelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n = config.num_attention_heads
        self.d = config.hidden_size // config.num_attention_heads
        self.c_attn = Conv1D(3 * config.hidden_size, config.hidden_size)
        self.c_proj = Conv1D(config.hidden_size, config.hidden_size)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.c_attn(x).split(self.n * self.d, dim=2)
        q = q.view(b, s, self.n, self.d).transpose(1, 2)
        k = k.view(b, s, self.n, self.d).transpose(1, 2)
        v = v.view(b, s, self.n, self.d).transpose(1, 2)
        p = torch.softmax(q @ k.transpose(-1, -2) * self.d ** -0.5, dim=-1)
        return self.c_proj((p @ v).transpose(1, 2).reshape(b, s, -1))

class Layer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attn_norm = nn.LayerNorm(config.hidden_size)
        self.attn = SelfAttention(config)
        self.ffn_norm = nn.LayerNorm(config.hidden_size)
        self.fc1 = nn.Linear(config.hidden_size, config.ffn_dim)
        self.fc2 = nn.Linear(config.ffn_dim, config.hidden_size)

    def forward(self, x):
        x = x + self.attn(self.attn_norm(x))
        return x + self.fc2(F.relu(self.fc1(self.ffn_norm(x))))

class Decoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([Layer(config) for _ in range(config.num_hidden_layers)])
        self.norm = nn.LayerNorm(config.hidden_size)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)

class DecoderForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model = Decoder(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, ids):
        return self.lm_head(self.model(ids))

class DecoderForTokenClassification(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model = Decoder(config)
        self.dropout = nn.Dropout(0.1)
        self.extra = nn.Linear(config.hidden_size, config.hidden_size)
        self.classifier = nn.Linear(config.hidden_size, 2)

    def forward(self, ids):
        return self.classifier(self.extra(self.dropout(self.model(ids))))
)";
  auto b = build(text, {{"hidden_size", 64}, {"num_attention_heads", 4}, {"ffn_dim", 256}, {"vocab_size", 100},
                        {"num_hidden_layers", 2}, {"architectures", {"DecoderForCausalLM"}}});
  ASSERT_TRUE(b->inv.structure.root);
  EXPECT_EQ(b->inv.structure.root->class_name, "DecoderForCausalLM");
  const ModuleChain* attn = chain(b->inv, "attention");
  ASSERT_NE(attn, nullptr) << "Conv1D projections are not linears";
  EXPECT_EQ(steps(*attn, "attention_core").size(), 1u) << kinds(*attn);
  EXPECT_EQ(steps(*attn, "qkv_projection").size(), 1u) << kinds(*attn);
  const ModuleChain* ffn = chain(b->inv, "ffn");
  ASSERT_NE(ffn, nullptr) << "the layer's inline feed-forward is not found";
  EXPECT_EQ(steps(*ffn, "activation").size(), 1u) << kinds(*ffn);
}

// A multimodal wrapper the checkpoint names builds its language model with
// AutoModel, outside the file; the file's own causal LM holds the layers and
// is analysed instead, and the inventory says why.
TEST(SubChainForms, NamedWrapperWithoutLayersGivesWayToTheCausalLm) {
  std::string text = R"(import torch
import torch.nn.functional as F
from torch import nn
from ...models.auto import AutoModel

class SelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size, bias=False)
        self.o = nn.Linear(config.hidden_size, config.hidden_size, bias=False)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return self.o(torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v)

class Mlp(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.up = nn.Linear(config.hidden_size, 4 * config.hidden_size, bias=False)
        self.down = nn.Linear(4 * config.hidden_size, config.hidden_size, bias=False)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))

class Layer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.norm1 = nn.LayerNorm(config.hidden_size)
        self.attn = SelfAttention(config)
        self.norm2 = nn.LayerNorm(config.hidden_size)
        self.mlp = Mlp(config)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))

class TextModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([Layer(config) for _ in range(config.num_hidden_layers)])
        self.norm = nn.LayerNorm(config.hidden_size)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)

class TextForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model = TextModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, ids):
        return self.lm_head(self.model(ids))

class Projector(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.proj = nn.Linear(config.vision_size, config.hidden_size)

    def forward(self, x):
        return self.proj(x)

class WrapperForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.vision_tower = AutoModel.from_config(config.vision_config)
        self.language_model = AutoModel.from_config(config.text_config)
        self.projector = Projector(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, ids, pixels):
        image = self.projector(self.vision_tower(pixels))
        return self.lm_head(self.language_model(ids, image))
)";
  auto b = build(text, {{"hidden_size", 64}, {"vision_size", 32}, {"vocab_size", 100}, {"num_hidden_layers", 2},
                        {"architectures", {"WrapperForConditionalGeneration"}}});
  ASSERT_TRUE(b->inv.structure.root);
  EXPECT_EQ(b->inv.structure.root->class_name, "TextForCausalLM");
  EXPECT_NE(b->inv.structure.blocks.node, nullptr);
  bool told = false;
  for (const std::string& n : b->inv.structure.notes)
    told = told || n.find("WrapperForConditionalGeneration") != std::string::npos;
  EXPECT_TRUE(told) << "the inventory does not say why the named class was passed over";
  EXPECT_NE(chain(b->inv, "attention"), nullptr);
}

// BERT family, written from scratch: the attention's output projection and
// norm sit in a child beside it, the feed-forward is split over an
// up-projection child with the activation and an output child, and the layer
// runs the feed-forward through HF's apply_chunking_to_forward.
TEST(SubChainForms, EncoderLayerWithSplitFeedForwardAndChunkedCall) {
  std::string text = R"(import torch
from torch import nn
from ...activations import ACT2FN
from ...pytorch_utils import apply_chunking_to_forward

class SelfAttn(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.h = config.num_attention_heads
        self.d = config.hidden_size // config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, x, mask=None):
        b, s, _ = x.shape
        q = self.query(x).view(b, s, self.h, self.d).transpose(1, 2)
        k = self.key(x).view(b, s, self.h, self.d).transpose(1, 2)
        v = self.value(x).view(b, s, self.h, self.d).transpose(1, 2)
        w = torch.matmul(q, k.transpose(-1, -2)) / self.d ** 0.5
        if mask is not None:
            w = w + mask
        p = torch.softmax(w, dim=-1)
        return torch.matmul(p, v).transpose(1, 2).reshape(b, s, -1)

class SelfOut(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=1e-12)
        self.dropout = nn.Dropout(0.1)

    def forward(self, h, residual):
        return self.LayerNorm(self.dropout(self.dense(h)) + residual)

class Attn(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self = SelfAttn(config)
        self.output = SelfOut(config)

    def forward(self, x, mask=None):
        return self.output(self.self(x, mask), x)

class Inter(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = ACT2FN[config.hidden_act]

    def forward(self, x):
        return self.act(self.dense(x))

class Out(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=1e-12)
        self.dropout = nn.Dropout(0.1)

    def forward(self, h, residual):
        return self.LayerNorm(self.dropout(self.dense(h)) + residual)

class Layer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.chunk = config.chunk_size_feed_forward
        self.attention = Attn(config)
        self.intermediate = Inter(config)
        self.output = Out(config)

    def forward(self, x, mask=None):
        a = self.attention(x, mask)
        return apply_chunking_to_forward(self.ff_chunk, self.chunk, 1, a)

    def ff_chunk(self, a):
        return self.output(self.intermediate(a), a)

class Encoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layer = nn.ModuleList([Layer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, ids, mask=None):
        x = self.embed(ids)
        for layer in self.layer:
            x = layer(x, mask)
        return x

class EncoderForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model = Encoder(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size)

    def forward(self, ids, mask=None):
        return self.lm_head(self.model(ids, mask))
)";
  auto b = build(text, {{"hidden_size", 64}, {"num_attention_heads", 4}, {"intermediate_size", 256}, {"vocab_size", 100},
                        {"num_hidden_layers", 2}, {"hidden_act", "gelu"}, {"chunk_size_feed_forward", 0}});
  ASSERT_NE(b->inv.structure.blocks.node, nullptr) << "the encoder layer list is not found";
  const ModuleChain* attn = chain(b->inv, "attention");
  ASSERT_NE(attn, nullptr) << "the attention with its output child is not an attention";
  EXPECT_EQ(steps(*attn, "attention_core").size(), 1u) << kinds(*attn);
  EXPECT_EQ(steps(*attn, "o_projection").size(), 1u) << kinds(*attn);
  const ModuleChain* ffn = chain(b->inv, "ffn");
  ASSERT_NE(ffn, nullptr) << "the split feed-forward behind apply_chunking_to_forward is not found";
  EXPECT_EQ(steps(*ffn, "activation").size(), 1u) << kinds(*ffn);
  EXPECT_EQ(steps(*ffn, "down_projection").size(), 1u) << kinds(*ffn);
}

// A hybrid decoder whose layers are built from a table of classes by a
// per-layer key (`TYPES[config.layer_kinds[i]]`): each class the config's
// list names is a block of its own, with its own chains; a table entry the
// list never names is not built.
TEST(SubChainForms, LayerClassesPickedPerLayerFromATable) {
  std::string text = R"(import torch
import torch.nn.functional as F
from torch import nn

class Norm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

class SelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size, bias=False)
        self.o = nn.Linear(config.hidden_size, config.hidden_size, bias=False)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return self.o(torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v)

class ShortConv(nn.Module):
    def __init__(self, config):
        super().__init__()
        d = config.hidden_size
        self.in_proj = nn.Linear(d, 2 * d, bias=False)
        self.conv = nn.Conv1d(d, d, kernel_size=4, groups=d, padding=3)
        self.out_proj = nn.Linear(d, d, bias=False)

    def forward(self, x):
        h, z = self.in_proj(x).chunk(2, dim=-1)
        h = self.conv(h.transpose(1, 2))[..., : x.shape[1]].transpose(1, 2)
        return self.out_proj(h * F.silu(z))

class Mlp(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate = nn.Linear(config.hidden_size, 4 * config.hidden_size, bias=False)
        self.up = nn.Linear(config.hidden_size, 4 * config.hidden_size, bias=False)
        self.down = nn.Linear(4 * config.hidden_size, config.hidden_size, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))

class AttentionLayer(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.norm1 = Norm(config.hidden_size)
        self.attn = SelfAttention(config)
        self.norm2 = Norm(config.hidden_size)
        self.mlp = Mlp(config)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))

class ConvLayer(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.norm1 = Norm(config.hidden_size)
        self.mixer = ShortConv(config)
        self.norm2 = Norm(config.hidden_size)
        self.mlp = Mlp(config)

    def forward(self, x):
        x = x + self.mixer(self.norm1(x))
        return x + self.mlp(self.norm2(x))

class UnusedLayer(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.norm1 = Norm(config.hidden_size)
        self.attn = SelfAttention(config)
        self.norm2 = Norm(config.hidden_size)
        self.mlp = Mlp(config)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))

LAYER_TYPES = {"attention": AttentionLayer, "conv": ConvLayer, "spare": UnusedLayer}

class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        layers = []
        for i in range(config.num_hidden_layers):
            layer_class = LAYER_TYPES[config.layer_kinds[i]]
            layers.append(layer_class(config, layer_idx=i))
        self.layers = nn.ModuleList(layers)
        self.norm = Norm(config.hidden_size)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)

class ModelForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model = Model(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, ids):
        return self.lm_head(self.model(ids))
)";
  auto b = build(text, {{"hidden_size", 64}, {"vocab_size", 100}, {"num_hidden_layers", 3},
                        {"layer_kinds", {"conv", "attention", "conv"}}});
  ASSERT_NE(b->inv.structure.blocks.node, nullptr) << "the layer list is not found";
  std::set<std::string> classes;
  for (const BlockChains& block : b->inv.chains) classes.insert(block.block_class);
  EXPECT_EQ(classes, (std::set<std::string>{"AttentionLayer", "ConvLayer"}));
  for (const BlockChains& block : b->inv.chains) {
    bool attention = false, conv = false;
    for (const ModuleChain& m : block.modules)
      for (const SubChainStep& s : m.steps) {
        attention = attention || s.kind == "attention_core";
        conv = conv || s.kind == "conv1d";
      }
    EXPECT_EQ(attention, block.block_class == "AttentionLayer") << block.block_class;
    EXPECT_EQ(conv, block.block_class == "ConvLayer") << block.block_class;
  }
}

// A block whose mixer is picked from a table by a per-layer key
// (`MIXERS[self.kind](config)`) holds one alternative per class the config's
// list names: an attention and a feed-forward in the mixer's place.
TEST(SubChainForms, MixerClassPickedPerLayerFromATable) {
  std::string text = R"(import torch
import torch.nn.functional as F
from torch import nn

class SelfAttention(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size, bias=False)
        self.o = nn.Linear(config.hidden_size, config.hidden_size, bias=False)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return self.o(torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v)

class Mlp(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.up = nn.Linear(config.hidden_size, 4 * config.hidden_size, bias=False)
        self.down = nn.Linear(4 * config.hidden_size, config.hidden_size, bias=False)

    def forward(self, x):
        return self.down(F.relu(self.up(x)) ** 2)

MIXERS = {"attention": SelfAttention, "mlp": Mlp}

class Block(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.norm = nn.LayerNorm(config.hidden_size)
        self.kind = config.block_kinds[layer_idx]
        self.mixer = MIXERS[self.kind](config, layer_idx=layer_idx)

    def forward(self, x):
        return x + self.mixer(self.norm(x))

class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([Block(config, i) for i in range(config.num_hidden_layers)])
        self.norm = nn.LayerNorm(config.hidden_size)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)

class ModelForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model = Model(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, ids):
        return self.lm_head(self.model(ids))
)";
  auto b = build(text, {{"hidden_size", 64}, {"vocab_size", 100}, {"num_hidden_layers", 2},
                        {"block_kinds", {"attention", "mlp"}}});
  ASSERT_NE(b->inv.structure.blocks.node, nullptr) << "the block with a table-picked mixer is not a decoder layer";
  EXPECT_EQ(b->inv.structure.blocks.node->class_name, "Block");
  const ModuleChain* attn = chain(b->inv, "attention");
  ASSERT_NE(attn, nullptr);
  EXPECT_EQ(steps(*attn, "attention_core").size(), 1u) << kinds(*attn);
  const ModuleChain* ffn = chain(b->inv, "ffn");
  ASSERT_NE(ffn, nullptr) << "the feed-forward alternative of the mixer is not analysed";
}

// The attention held with its norm in a child of no role of its own
// (CPM-Ant's self_att, DBRX's norm_attn_norm) is the layer's attention chain,
// its softmax an nn.Softmax module; the vision tower's layer list that comes
// first in a multimodal model is not the decoder's.
TEST(SubChainForms, AttentionInsideANormHolderAndTheTextLayersOfAMultimodalModel) {
  std::string text = R"(import torch
import torch.nn.functional as F
from torch import nn

class Norm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)

class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        d = config.hidden_size
        self.project_q = nn.Linear(d, d, bias=False)
        self.project_k = nn.Linear(d, d, bias=False)
        self.project_v = nn.Linear(d, d, bias=False)
        self.out = nn.Linear(d, d, bias=False)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x):
        q, k, v = self.project_q(x), self.project_k(x), self.project_v(x)
        return self.out(self.softmax(q @ k.transpose(-1, -2)) @ v)

class AttentionBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.norm = Norm(config.hidden_size)
        self.attention = Attention(config)

    def forward(self, x):
        return x + self.attention(self.norm(x))

class Mlp(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.up = nn.Linear(config.hidden_size, 4 * config.hidden_size, bias=False)
        self.down = nn.Linear(4 * config.hidden_size, config.hidden_size, bias=False)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))

class TextLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_att = AttentionBlock(config)
        self.norm = Norm(config.hidden_size)
        self.ffn = Mlp(config)

    def forward(self, x):
        x = self.self_att(x)
        return x + self.ffn(self.norm(x))

class VisionLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.norm1 = nn.LayerNorm(config.hidden_size)
        self.attn = Attention(config)
        self.norm2 = nn.LayerNorm(config.hidden_size)
        self.mlp = Mlp(config)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))

class VisionModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.patch = nn.Linear(48, config.hidden_size)
        self.layers = nn.ModuleList([VisionLayer(config) for _ in range(2)])

    def forward(self, pixels):
        x = self.patch(pixels)
        for layer in self.layers:
            x = layer(x)
        return x

class TextModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([TextLayer(config) for _ in range(config.num_hidden_layers)])
        self.norm = Norm(config.hidden_size)

    def forward(self, ids, image):
        x = self.embed(ids) + image
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)

class ForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.vision_model = VisionModel(config)
        self.language_model = TextModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, ids, pixels):
        return self.lm_head(self.language_model(ids, self.vision_model(pixels)))
)";
  auto b = build(text, {{"hidden_size", 64}, {"vocab_size", 100}, {"num_hidden_layers", 2}});
  ASSERT_NE(b->inv.structure.blocks.node, nullptr);
  EXPECT_EQ(b->inv.structure.blocks.node->class_name, "TextLayer");
  const ModuleChain* attn = chain(b->inv, "attention");
  ASSERT_NE(attn, nullptr) << "the attention inside the norm holder is not a chain";
  EXPECT_EQ(attn->class_name, "Attention");
  EXPECT_EQ(steps(*attn, "attention_core").size(), 1u) << kinds(*attn);
}

// A layer class whose constructor takes its kind per layer
// (`Layer(config, i, layer_type=config.layer_kinds[i])`, default "conv")
// keeps both arms: the attention layers are analysed as well as the
// default's convolution layers.
TEST(SubChainForms, LayerKindPassedPerLayerKeepsBothArms) {
  std::string text = R"(import torch
import torch.nn.functional as F
from torch import nn

class SelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size, bias=False)
        self.o = nn.Linear(config.hidden_size, config.hidden_size, bias=False)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return self.o(torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v)

class ShortConv(nn.Module):
    def __init__(self, config):
        super().__init__()
        d = config.hidden_size
        self.in_proj = nn.Linear(d, 2 * d, bias=False)
        self.conv = nn.Conv1d(d, d, kernel_size=4, groups=d, padding=3)
        self.out_proj = nn.Linear(d, d, bias=False)

    def forward(self, x):
        h, z = self.in_proj(x).chunk(2, dim=-1)
        h = self.conv(h.transpose(1, 2))[..., : x.shape[1]].transpose(1, 2)
        return self.out_proj(h * F.silu(z))

class Mlp(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.up = nn.Linear(config.hidden_size, 4 * config.hidden_size, bias=False)
        self.down = nn.Linear(4 * config.hidden_size, config.hidden_size, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.up(x)))

class Layer(nn.Module):
    def __init__(self, config, layer_idx, layer_type="conv"):
        super().__init__()
        self.kind = layer_type
        self.norm1 = nn.LayerNorm(config.hidden_size)
        if layer_type == "conv":
            self.mixer = ShortConv(config)
        elif layer_type == "attention":
            self.attn = SelfAttention(config)
        self.norm2 = nn.LayerNorm(config.hidden_size)
        self.mlp = Mlp(config)

    def forward(self, x):
        h = self.norm1(x)
        if self.kind == "conv":
            h = self.mixer(h)
        elif self.kind == "attention":
            h = self.attn(h)
        x = x + h
        return x + self.mlp(self.norm2(x))

class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(
            [Layer(config, i, layer_type=config.layer_kinds[i]) for i in range(config.num_hidden_layers)])
        self.norm = nn.LayerNorm(config.hidden_size)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)

class ModelForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model = Model(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, ids):
        return self.lm_head(self.model(ids))
)";
  auto b = build(text, {{"hidden_size", 64}, {"vocab_size", 100}, {"num_hidden_layers", 2},
                        {"layer_kinds", {"conv", "attention"}}});
  ASSERT_NE(b->inv.structure.blocks.node, nullptr);
  const ModuleChain* attn = chain(b->inv, "attention");
  ASSERT_NE(attn, nullptr) << "the attention layers are dropped for the parameter's default";
  EXPECT_EQ(steps(*attn, "attention_core").size(), 1u) << kinds(*attn);
  EXPECT_NE(chain(b->inv, "linear_attention"), nullptr) << "the convolution layers are lost";
}

}  // namespace
}  // namespace npufuse::model
