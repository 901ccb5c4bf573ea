// A function's dataflow reduced for its picture: literals and attribute
// reads are left out, tuple packing is looked through, bookkeeping that
// does not depend on an input is dropped, and ops are tagged with the
// candidate that owns them.
#include <gtest/gtest.h>

#include <algorithm>

#include "model/dataflow.h"
#include "model/source_set.h"
#include "report/svg_dataflow_graph.h"

namespace npufuse::report {
namespace {

const char* kSource = R"PY(
import torch

def norm(x, w):
    h = x.float()
    v = h.pow(2).mean(-1, keepdim=True)
    a, b = h, v
    half = x.shape[-1] // 2
    y = a * torch.rsqrt(b + 1e-6)
    return w * y
)PY";

int index_of(const PictureGraph& g, const std::string& label) {
  auto it = std::find_if(g.nodes.begin(), g.nodes.end(), [&](const PictureNode& n) { return n.label == label; });
  return it == g.nodes.end() ? -1 : static_cast<int>(it - g.nodes.begin());
}

bool has_edge(const PictureGraph& g, int from, int to) {
  return std::find(g.edges.begin(), g.edges.end(), std::make_pair(from, to)) != g.edges.end();
}

PictureGraph picture(const OpOwner& owner) {
  static model::SourceSet sources = model::SourceSet::from_texts({{"m.py", kSource}});
  const model::FunctionDecl* fn = sources.find_function("norm");
  EXPECT_NE(fn, nullptr);
  return dataflow_picture(model::build_dataflow(sources, *fn->file, *fn->node), owner);
}

TEST(DataflowPicture, KeepsTheComputationAndDropsBookkeeping) {
  PictureGraph g = picture(nullptr);
  for (const char* label : {"input x", "input w", "pow", "mean", "add", "rsqrt"})
    EXPECT_GE(index_of(g, label), 0) << label;
  for (const PictureNode& n : g.nodes) {
    EXPECT_NE(n.label, "const") << "literals are not drawn";
    EXPECT_NE(n.label, "shape") << "attribute reads are not drawn";
    EXPECT_NE(n.label, "floor_divide") << "shape arithmetic is not drawn";
    EXPECT_NE(n.label, "tuple");
    EXPECT_NE(n.label, "unpack");
  }
}

TEST(DataflowPicture, EdgesLookThroughTuplesAndPointForward) {
  PictureGraph g = picture(nullptr);
  // `a, b = h, v` then `b + 1e-6`: the add reads the mean.
  EXPECT_TRUE(has_edge(g, index_of(g, "mean"), index_of(g, "add")));
  EXPECT_TRUE(has_edge(g, index_of(g, "pow"), index_of(g, "mean")));
  for (auto [from, to] : g.edges) EXPECT_LT(from, to);
}

TEST(DataflowPicture, OpsAreTaggedWithTheirOwner) {
  OpOwner owner = [](const model::DataflowOp& op) { return op.name == "rsqrt" || op.name == "pow" ? 4 : -1; };
  PictureGraph g = picture(owner);
  EXPECT_EQ(g.nodes[static_cast<size_t>(index_of(g, "rsqrt"))].candidate, 4);
  EXPECT_EQ(g.nodes[static_cast<size_t>(index_of(g, "pow"))].candidate, 4);
  EXPECT_EQ(g.nodes[static_cast<size_t>(index_of(g, "mean"))].candidate, -1);
  EXPECT_NE(g.nodes[static_cast<size_t>(index_of(g, "pow"))].detail.find("m.py:6"), std::string::npos);
}

}  // namespace
}  // namespace npufuse::report
