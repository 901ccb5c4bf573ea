// The built-in layered layout: no two boxes overlap, every edge points down,
// a cycle does not hang it, and barycentre ordering untangles a crossing.
#include <gtest/gtest.h>

#include <random>

#include "report/svg_layout.h"

namespace npufuse::report {
namespace {

bool overlap(const NodeBox& a, const NodeBox& b) {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

void expect_well_formed(const LayoutGraph& g, const Layout& l) {
  ASSERT_EQ(l.nodes.size(), g.widths.size());
  for (size_t i = 0; i < l.nodes.size(); ++i)
    for (size_t j = i + 1; j < l.nodes.size(); ++j)
      EXPECT_FALSE(overlap(l.nodes[i], l.nodes[j])) << "nodes " << i << " and " << j << " overlap";
  for (const NodeBox& b : l.nodes) {
    EXPECT_GE(b.x, 0);
    EXPECT_GE(b.y, 0);
    EXPECT_LE(b.x + b.width, l.width);
    EXPECT_LE(b.y + b.height, l.height);
  }
}

TEST(LayeredLayout, EdgesPointDownAndBoxesDoNotOverlap) {
  // A diamond with a long edge: 0 -> 1 -> 3, 0 -> 2 -> 3, 0 -> 3.
  LayoutGraph g{{40, 60, 80, 40}, {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {0, 3}}};
  Layout l = layered_layout(g);
  expect_well_formed(g, l);
  for (auto [from, to] : g.edges) EXPECT_LT(l.nodes[from].y + l.nodes[from].height, l.nodes[to].y);
  EXPECT_EQ(l.nodes[3].layer, 2);  // longest path, not the direct edge
}

TEST(LayeredLayout, RandomDagsStayWellFormed) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    int n = 1 + static_cast<int>(rng() % 60);
    LayoutGraph g;
    for (int i = 0; i < n; ++i) g.widths.push_back(20 + static_cast<double>(rng() % 120));
    for (int e = 0; e < n * 2; ++e) {
      int a = static_cast<int>(rng() % n), b = static_cast<int>(rng() % n);
      if (a < b) g.edges.emplace_back(a, b);  // a < b keeps it acyclic
    }
    Layout l = layered_layout(g);
    expect_well_formed(g, l);
    for (auto [from, to] : g.edges) EXPECT_GT(l.nodes[to].layer, l.nodes[from].layer);
  }
}

TEST(LayeredLayout, ACycleStillGetsADrawing) {
  LayoutGraph g{{30, 30, 30}, {{0, 1}, {1, 2}, {2, 1}}};
  Layout l = layered_layout(g);
  expect_well_formed(g, l);
  EXPECT_LT(l.nodes[0].layer, l.nodes[1].layer);
}

TEST(LayeredLayout, BarycentreOrderingUncrossesEdges) {
  // Sources a=0, b=1 in that order; their children listed crosswise
  // (2 is b's child, 3 is a's). Ordering by barycentre puts 3 left of 2.
  LayoutGraph g{{30, 30, 30, 30}, {{1, 2}, {0, 3}}};
  Layout l = layered_layout(g);
  expect_well_formed(g, l);
  bool a_left = l.nodes[0].x < l.nodes[1].x;
  bool child_of_a_left = l.nodes[3].x < l.nodes[2].x;
  EXPECT_EQ(a_left, child_of_a_left);
}

TEST(LayeredLayout, EmptyGraph) {
  Layout l = layered_layout(LayoutGraph{});
  EXPECT_TRUE(l.nodes.empty());
}

}  // namespace
}  // namespace npufuse::report
