// Module-list experts called by an index: the expert's weights are the
// index's slice of the stacked weights; and auxiliary-loss helpers stay out
// of the inference dataflow.
#include <gtest/gtest.h>

#include <algorithm>

#include "model/loss_helpers.h"
#include "model/module_roles.h"

namespace npufuse::model {
namespace {

struct Built {
  SourceSet sources;
  ModelConfig config;
  ConfigSchema schema;
  FunctionDataflow graph;
};

std::unique_ptr<Built> inline_text(const std::string& text, const std::string& cls) {
  auto b = std::make_unique<Built>(Built{SourceSet::from_texts({{"m.py", text}}), ModelConfig(), {}, {}});
  b->schema = ConfigSchema::discover(b->sources);
  Evaluator ev(b->sources, b->config, b->schema);
  RoleTable roles = RoleTable::infer(b->sources, ev);
  RoleTableSubmodules lookup(roles);
  b->graph = build_inlined_forward(b->sources, *b->sources.find_class(cls), lookup);
  return b;
}

const char* const kExperts = R"(import torch
from torch import nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, h, i):
        super().__init__()
        self.gate = nn.Linear(h, i, bias=False)
        self.scale = nn.Parameter(torch.ones(i))
        self.down = nn.Linear(i, h, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.scale)


class Block(nn.Module):
    def __init__(self, h, i, n):
        super().__init__()
        self.n = n
        self.experts = nn.ModuleList([Expert(h, i) for _ in range(n)])

    def forward(self, x):
        out = torch.zeros_like(x)
        for e in range(self.n):
            out = out + self.experts[e](x)
        for j in range(self.n):
            held = self.experts[j]
            out = out + held(x)
        return out
)";

// The value the loop variable `name` was bound to (its `iterate` op's output).
int loop_variable(const FunctionDataflow& g, const std::string& name) {
  for (const DataflowValue& v : g.values)
    if (v.name == name && v.producer >= 0 && g.ops[static_cast<size_t>(v.producer)].name == "iterate") return v.id;
  return -1;
}

// The getitem ops slicing the attribute `path` and the index value each uses.
std::vector<int> slice_indices(const FunctionDataflow& g, const std::string& path) {
  std::vector<int> out;
  for (const DataflowOp& op : g.ops) {
    if (op.name != "getitem" || op.inputs.size() != 2) continue;
    if (g.producer_of(op.inputs[0]).name == path) out.push_back(op.inputs[1]);
  }
  return out;
}

TEST(ExpertElements, WeightsOfAnIndexedExpertAreSlicesOfTheStackedWeight) {
  auto b = inline_text(kExperts, "Block");
  const FunctionDataflow& g = b->graph;
  int e = loop_variable(g, "e"), j = loop_variable(g, "j");
  ASSERT_GE(e, 0) << g.dump();
  ASSERT_GE(j, 0) << g.dump();
  // Called directly (`self.experts[e](x)`) and through a local (`held(x)`): both index.
  EXPECT_EQ(slice_indices(g, "self.experts[].gate.weight"), (std::vector<int>{e, j})) << g.dump();
  EXPECT_EQ(slice_indices(g, "self.experts[].down.weight"), (std::vector<int>{e, j})) << g.dump();
  // A raw nn.Parameter of the expert is sliced the same way; a scalar attribute is not.
  EXPECT_EQ(slice_indices(g, "self.experts[].scale"), (std::vector<int>{e, j})) << g.dump();
  EXPECT_TRUE(slice_indices(g, "self.n").empty());
}

TEST(ExpertElements, SubmoduleOutsideAListKeepsItsPlainWeight) {
  auto b = inline_text(R"(import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.proj = nn.Linear(h, h)

    def forward(self, x):
        return self.proj(x)
)",
                       "Block");
  const FunctionDataflow& g = b->graph;
  EXPECT_TRUE(slice_indices(g, "self.proj.weight").empty());
  EXPECT_TRUE(std::any_of(g.ops.begin(), g.ops.end(), [](const DataflowOp& op) { return op.name == "self.proj.weight"; }));
}

const char* const kLosses = R"(import torch
import torch.nn.functional as F
from torch import nn


def router_probs(logits):
    return F.softmax(logits, dim=-1)


def balance_loss(logits, k):
    probs = router_probs(logits)
    return probs.mean()


def z_loss(logits):
    return torch.logsumexp(logits, dim=-1).square().mean()


def entropy_helper(logits):
    return router_probs(logits).sum()


def unused_helper(x):
    return x * 2


class Router(nn.Module):
    def __init__(self, h, n):
        super().__init__()
        self.gate = nn.Linear(h, n)

    def forward(self, x):
        logits = self.gate(x)
        weights = router_probs(logits)
        if self.training:
            extra = entropy_helper(logits)
            self.aux = balance_loss(logits, 2)
        self.router_z_loss = z_loss(logits)
        return weights
)";

TEST(LossHelpers, HelpersCalledOnlyForLossesAreTrainingOnly) {
  SourceSet sources = SourceSet::from_texts({{"m.py", kLosses}});
  std::set<std::string> found = training_only_helpers(sources);
  // Under `if self.training` (balance_loss, entropy_helper) or stored into a loss (z_loss).
  EXPECT_EQ(found, (std::set<std::string>{"balance_loss", "entropy_helper", "z_loss"}));
  // router_probs is also called by the forward itself; nobody calls unused_helper.
}

TEST(LossHelpers, InlinedForwardKeepsALossHelperOpaque) {
  auto b = inline_text(kLosses, "Router");
  const FunctionDataflow& g = b->graph;
  auto has = [&](const std::string& name) {
    return std::any_of(g.ops.begin(), g.ops.end(), [&](const DataflowOp& op) { return op.name == name; });
  };
  EXPECT_TRUE(has("call:balance_loss")) << g.dump();
  EXPECT_TRUE(has("call:z_loss")) << g.dump();
  EXPECT_FALSE(has("logsumexp")) << g.dump();
  // The routing helper is still inlined: its softmax is part of the forward.
  EXPECT_TRUE(has("softmax")) << g.dump();
}

}  // namespace
}  // namespace npufuse::model
