#pragma once
// A built-in layered drawing of a directed acyclic graph, used when graphviz
// is not installed: every node gets a layer by the longest path from a source
// (so each edge points down), the nodes of a layer are ordered by the
// barycentre of their neighbours (fewer crossings), and boxes are placed on
// a grid so that no two overlap.
#include <utility>
#include <vector>

namespace npufuse::report {

struct LayoutGraph {
  std::vector<double> widths;                // one per node, in px
  std::vector<std::pair<int, int>> edges;    // (from, to); an edge closing a cycle is ignored
};

struct NodeBox {
  double x = 0, y = 0;  // top-left corner
  double width = 0, height = 0;
  int layer = 0;
};

struct Layout {
  std::vector<NodeBox> nodes;
  double width = 0, height = 0;
};

struct LayoutSpacing {
  double node_height = 24;
  double layer_gap = 26;  // vertical space between layers, for the edges
  double node_gap = 14;   // horizontal space between neighbours in a layer
  double margin = 8;
};

Layout layered_layout(const LayoutGraph& graph, const LayoutSpacing& spacing = {});

}  // namespace npufuse::report
