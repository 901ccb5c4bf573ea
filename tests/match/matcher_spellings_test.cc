// Matcher behaviours that let one search spelling meet several model
// spellings (view/reshape, a unit-axes view and unsqueezes, list/tuple,
// training-only dropout), keep
// independent returned values apart, and let a whole chain contain another
// rule's chain.
#include <gtest/gtest.h>

#include "match/matcher.h"
#include "match/pattern.h"
#include "model/dataflow.h"
#include "model/source_set.h"
#include "rules/rule.h"

namespace npufuse::match {
namespace {

struct TextRule {
  model::SourceSet sources;
  rules::Rule rule;
};

std::unique_ptr<TextRule> text_rule(const std::string& id, const std::string& text,
                                    nlohmann::json match = nlohmann::json::object()) {
  auto r = std::make_unique<TextRule>(TextRule{model::SourceSet::from_texts({{id + ".py", "import torch\nimport torch.nn.functional as F\n" + text}}), {}});
  r->rule.id = id;
  r->rule.path = id + ".py";
  r->rule.match = std::move(match);
  r->rule.sources = &r->sources;
  r->rule.file = r->sources.files().front().get();
  for (const frontend::ast::stmt* s : r->rule.file->parsed->module->body)
    if (auto* fn = frontend::ast::as<frontend::ast::FunctionDef>(s); fn && std::string(fn->name).rfind("search", 0) == 0)
      r->rule.searches.push_back(fn);
  return r;
}

struct Target {
  model::SourceSet sources;
  model::FunctionDataflow graph;
};

std::unique_ptr<Target> function_graph(const std::string& text) {
  auto t = std::make_unique<Target>(
      Target{model::SourceSet::from_texts({{"model.py", "import torch\nimport torch.nn.functional as F\n" + text}}), {}});
  const model::ModelFile& f = *t->sources.files().front();
  for (const frontend::ast::stmt* s : f.parsed->module->body)
    if (auto* fn = frontend::ast::as<frontend::ast::FunctionDef>(s)) t->graph = model::build_dataflow(t->sources, f, *fn);
  return t;
}

size_t matches(const TextRule& rule, const std::string& model) {
  std::vector<Pattern> ps = compile_rule(rule.rule);
  return match_patterns(ps, function_graph(model)->graph).matches.size();
}

TEST(MatcherSpellings, ViewAndReshapeAreOneStep) {
  auto rule = text_rule("t.pairs", "def search(x):\n    return torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))\n");
  EXPECT_EQ(matches(*rule, "def f(a):\n    return torch.view_as_complex(a.float().view(*a.shape[:-1], -1, 2))\n"), 1u);
  // A transpose is not a reshape.
  EXPECT_EQ(matches(*rule, "def f(a):\n    return torch.view_as_complex(a.float().transpose(1, 2))\n"), 0u);
}

TEST(MatcherSpellings, AnInferredSizeMeetsTheSizeItInfers) {
  auto rule = text_rule("t.heads", "def search(x, n):\n    return torch.exp(x.view(x.shape[0], x.shape[1], n, -1))\n");
  EXPECT_EQ(matches(*rule, "def f(a, n, d):\n    return torch.exp(a.view(a.shape[0], a.shape[1], n, d))\n"), 1u);
  EXPECT_EQ(matches(*rule, "def f(a, n):\n    return torch.exp(a.reshape(a.shape[0], a.shape[1], n, -1))\n"), 1u);
  // -1 in two places where the pattern names sizes: the rest could be split another way
  EXPECT_EQ(matches(*rule, "def f(a, d):\n    return torch.exp(a.view(a.shape[0], a.shape[1], -1, d))\n"), 0u);
}

TEST(MatcherSpellings, AViewThatAddsUnitAxesIsTheUnsqueezesThatAddThem) {
  auto rule = text_rule("t.table", "def search(z, t):\n    return z * t.view(1, z.shape[1], 1, z.shape[-1])\n");
  EXPECT_EQ(matches(*rule, "def f(a, fc):\n    return a * fc[None, :, None, :]\n"), 1u);
  EXPECT_EQ(matches(*rule, "def f(a, fc):\n    return a * fc.unsqueeze(0).unsqueeze(2)\n"), 1u);
  EXPECT_EQ(matches(*rule, "def f(a, fc):\n    return a * fc.unsqueeze(1).unsqueeze(0)\n"), 1u);  // axes 1 then 0 end at 0 and 2
  // The new axes elsewhere broadcast the table along other axes.
  EXPECT_EQ(matches(*rule, "def f(a, fc):\n    return a * fc[:, None, None, :]\n"), 0u);
  EXPECT_EQ(matches(*rule, "def f(a, fc):\n    return a * fc.unsqueeze(0)\n"), 0u);
  EXPECT_EQ(matches(*rule, "def f(a, fc):\n    return a * fc[..., None, :]\n"), 0u);
}

TEST(MatcherSpellings, ANewAxisNextToOneJustAddedIsEitherPlace) {
  // The pattern's table gets its unit axis at 1; the model's second
  // unsqueeze(0) puts it beside the unit axis its first one added at 0: the
  // same tensor.
  auto rule = text_rule("t.rows", "def search(z, t):\n    return z * t.unsqueeze(1)\n");
  EXPECT_EQ(matches(*rule, "def f(a, c):\n    return a * c.unsqueeze(0).unsqueeze(0)\n"), 1u);
  EXPECT_EQ(matches(*rule, "def f(a, c):\n    return a * c.unsqueeze(0).unsqueeze(1)\n"), 1u);
  EXPECT_EQ(matches(*rule, "def f(a, c):\n    return a * c[None, None]\n"), 1u);
  // Beside no unit axis, or two places away, the axis is elsewhere.
  EXPECT_EQ(matches(*rule, "def f(a, c):\n    return a * c.unsqueeze(0)\n"), 0u);
  EXPECT_EQ(matches(*rule, "def f(a, c):\n    return a * c.unsqueeze(2).unsqueeze(0)\n"), 0u);
  EXPECT_EQ(matches(*rule, "def f(a, c):\n    return a * c.unsqueeze(0).unsqueeze(2)\n"), 0u);
}

TEST(MatcherSpellings, ConcatenatedTensorsInAListOrATuple) {
  auto rule = text_rule("t.cat", "def search(a, b):\n    return torch.cat((a * 2, b), dim=-1)\n");
  EXPECT_EQ(matches(*rule, "def f(x, y):\n    return torch.cat([x * 2, y], dim=-1)\n"), 1u);
  EXPECT_EQ(matches(*rule, "def f(x, y):\n    return torch.cat((x * 2, y), dim=-1)\n"), 1u);
}

TEST(MatcherSpellings, SdpaDropoutOnlyWhileTrainingPasses) {
  auto rule = text_rule("t.sdpa", "def search(q, k, v, m):\n    return F.scaled_dot_product_attention(q, k, v, attn_mask=m)\n");
  EXPECT_EQ(matches(*rule, "def f(self, q, k, v, m):\n"
                           "    return F.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=self.p if self.training else 0.0)\n"),
            1u);
  EXPECT_EQ(matches(*rule, "def f(self, q, k, v, m):\n"
                           "    return F.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=0.0 if not self.training else self.p)\n"),
            1u);
  EXPECT_EQ(matches(*rule, "def f(module, q, k, v, m, p):\n"
                           "    return F.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=p if module.training else 0.0)\n"),
            1u);
  EXPECT_EQ(matches(*rule, "def f(q, k, v, m):\n    return F.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=0.0)\n"), 1u);
  // Dropout in eval mode too changes the numbers.
  EXPECT_EQ(matches(*rule, "def f(q, k, v, m):\n    return F.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=0.1)\n"), 0u);
}

const char* kTwoNorms =
    "def search(q, k, wq, wk):\n"
    "    return wq * (q * torch.rsqrt(q.pow(2).mean(-1, keepdim=True) + 1e-6)), "
    "wk * (k * torch.rsqrt(k.pow(2).mean(-1, keepdim=True) + 1e-6))\n";

TEST(MatcherSpellings, IndependentReturnsAreNeverComputedFromOneAnother) {
  // The input norm of a layer, then the per-head norm of its projection: two
  // stages of one path. Only the pair of sibling norms is a q/k pair.
  const char* layer =
      "def f(x, w_in, w, wq, wk):\n"
      "    h = w_in * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))\n"
      "    q = h @ w\n"
      "    qn = wq * (q * torch.rsqrt(q.pow(2).mean(-1, keepdim=True) + 1e-6))\n"
      "    return qn\n";
  auto tied = text_rule("t.qk", kTwoNorms);
  auto apart = text_rule("t.qk", kTwoNorms, {{"independent_returns", true}});
  EXPECT_EQ(matches(*tied, layer), 1u);
  EXPECT_EQ(matches(*apart, layer), 0u);
  const char* siblings =
      "def f(q, k, wq, wk):\n"
      "    qn = wq * (q * torch.rsqrt(q.pow(2).mean(-1, keepdim=True) + 1e-6))\n"
      "    kn = wk * (k * torch.rsqrt(k.pow(2).mean(-1, keepdim=True) + 1e-6))\n"
      "    return qn @ kn\n";
  EXPECT_EQ(matches(*apart, siblings), 1u);
}

TEST(MatcherSpellings, AContainedChainIsPartOfTheWholeOne) {
  auto inner = text_rule("t.inner", "def search(x, w):\n    return x * w + 1\n");
  auto whole = text_rule("t.whole", "def search(x, w):\n    return torch.sigmoid(x * w + 1)\n", {{"contains", {"t.inner"}}});
  std::vector<Pattern> ps = compile_rule(inner->rule);
  for (Pattern& p : compile_rule(whole->rule)) ps.push_back(std::move(p));
  MatchResult r = match_patterns(ps, function_graph("def f(a, b):\n    return torch.sigmoid(a * b + 1)\n")->graph);
  ASSERT_EQ(r.matches.size(), 1u);
  EXPECT_EQ(r.matches[0].pattern->rule->id, "t.whole");
  // Outside the whole chain the inner one stands on its own.
  r = match_patterns(ps, function_graph("def f(a, b):\n    return torch.tanh(a * b + 1)\n")->graph);
  ASSERT_EQ(r.matches.size(), 1u);
  EXPECT_EQ(r.matches[0].pattern->rule->id, "t.inner");
}

TEST(MatcherSpellings, AnOpaqueCallIsNotOneTheFileDefines) {
  auto rule = text_rule("t.cache", "def search(c, k, v, i, kw):\n    return c.update(k, v, i, kw)\n", {{"opaque_calls", true}});
  const char* call = "def f(cache, k, v, pos):\n    return cache.update(k, v, 0, {'cache_position': pos})\n";
  EXPECT_EQ(matches(*rule, call), 1u);
  // The cache class is in the file: its update is analysed, not opaque.
  EXPECT_EQ(matches(*rule, std::string("class Cache:\n    def update(self, k, v, i, kw):\n        return k, v\n\n\n") + call), 0u);
}

}  // namespace
}  // namespace npufuse::match
