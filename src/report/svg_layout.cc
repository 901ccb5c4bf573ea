#include "report/svg_layout.h"

#include <algorithm>
#include <numeric>

namespace npufuse::report {
namespace {

using Adjacency = std::vector<std::vector<int>>;

// Longest path from a source, in topological order (Kahn). Nodes on a cycle
// are never released by Kahn's walk; they are placed below everything that
// was, so that a malformed graph still gets a drawing.
std::vector<int> longest_path_layers(int n, const Adjacency& preds, const Adjacency& succs) {
  std::vector<int> indegree(static_cast<size_t>(n), 0), layer(static_cast<size_t>(n), 0);
  for (int v = 0; v < n; ++v) indegree[static_cast<size_t>(v)] = static_cast<int>(preds[static_cast<size_t>(v)].size());
  std::vector<int> ready;
  for (int v = 0; v < n; ++v)
    if (indegree[static_cast<size_t>(v)] == 0) ready.push_back(v);
  std::vector<bool> placed(static_cast<size_t>(n), false);
  int deepest = 0;
  for (size_t i = 0; i < ready.size(); ++i) {
    int v = ready[i];
    placed[static_cast<size_t>(v)] = true;
    deepest = std::max(deepest, layer[static_cast<size_t>(v)]);
    for (int s : succs[static_cast<size_t>(v)]) {
      layer[static_cast<size_t>(s)] = std::max(layer[static_cast<size_t>(s)], layer[static_cast<size_t>(v)] + 1);
      if (--indegree[static_cast<size_t>(s)] == 0) ready.push_back(s);
    }
  }
  for (int v = 0; v < n; ++v)
    if (!placed[static_cast<size_t>(v)]) layer[static_cast<size_t>(v)] = ++deepest;
  return layer;
}

// Mean position of `v`'s neighbours in the adjacent layer; a node without
// neighbours keeps its own position.
double barycentre(int v, const Adjacency& neighbours, const std::vector<double>& position) {
  const auto& list = neighbours[static_cast<size_t>(v)];
  if (list.empty()) return position[static_cast<size_t>(v)];
  double sum = 0;
  for (int u : list) sum += position[static_cast<size_t>(u)];
  return sum / static_cast<double>(list.size());
}

void order_by(std::vector<int>& row, const Adjacency& neighbours, std::vector<double>& position) {
  std::vector<double> key(row.size());
  for (size_t i = 0; i < row.size(); ++i) key[i] = barycentre(row[i], neighbours, position);
  std::vector<size_t> idx(row.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return key[a] < key[b]; });
  std::vector<int> sorted;
  for (size_t i : idx) sorted.push_back(row[i]);
  row = std::move(sorted);
  for (size_t i = 0; i < row.size(); ++i) position[static_cast<size_t>(row[i])] = static_cast<double>(i);
}

}  // namespace

Layout layered_layout(const LayoutGraph& graph, const LayoutSpacing& spacing) {
  const int n = static_cast<int>(graph.widths.size());
  Layout out;
  if (n == 0) return out;
  Adjacency preds(static_cast<size_t>(n)), succs(static_cast<size_t>(n));
  for (auto [from, to] : graph.edges) {
    if (from < 0 || to < 0 || from >= n || to >= n || from == to) continue;
    succs[static_cast<size_t>(from)].push_back(to);
    preds[static_cast<size_t>(to)].push_back(from);
  }
  std::vector<int> layer = longest_path_layers(n, preds, succs);
  // An edge that closed a cycle may now point up; drop it from the ordering.
  for (int v = 0; v < n; ++v) {
    auto up = [&](int u) { return layer[static_cast<size_t>(u)] >= layer[static_cast<size_t>(v)]; };
    auto& p = preds[static_cast<size_t>(v)];
    p.erase(std::remove_if(p.begin(), p.end(), up), p.end());
    auto down = [&](int u) { return layer[static_cast<size_t>(u)] <= layer[static_cast<size_t>(v)]; };
    auto& s = succs[static_cast<size_t>(v)];
    s.erase(std::remove_if(s.begin(), s.end(), down), s.end());
  }

  int layers = *std::max_element(layer.begin(), layer.end()) + 1;
  std::vector<std::vector<int>> rows(static_cast<size_t>(layers));
  std::vector<double> position(static_cast<size_t>(n));
  for (int v = 0; v < n; ++v) {
    auto& row = rows[static_cast<size_t>(layer[static_cast<size_t>(v)])];
    position[static_cast<size_t>(v)] = static_cast<double>(row.size());
    row.push_back(v);
  }
  // A few down and up sweeps are enough for the graphs of one block.
  for (int sweep = 0; sweep < 4; ++sweep) {
    for (size_t l = 1; l < rows.size(); ++l) order_by(rows[l], preds, position);
    for (size_t l = rows.size(); l-- > 1;) order_by(rows[l - 1], succs, position);
  }

  out.nodes.resize(static_cast<size_t>(n));
  std::vector<double> row_width(rows.size(), 0);
  for (size_t l = 0; l < rows.size(); ++l) {
    for (int v : rows[l]) row_width[l] += graph.widths[static_cast<size_t>(v)];
    if (!rows[l].empty()) row_width[l] += spacing.node_gap * static_cast<double>(rows[l].size() - 1);
  }
  double widest = *std::max_element(row_width.begin(), row_width.end());
  for (size_t l = 0; l < rows.size(); ++l) {
    double x = spacing.margin + (widest - row_width[l]) / 2;  // each layer centred
    double y = spacing.margin + static_cast<double>(l) * (spacing.node_height + spacing.layer_gap);
    for (int v : rows[l]) {
      NodeBox& b = out.nodes[static_cast<size_t>(v)];
      b.x = x;
      b.y = y;
      b.width = graph.widths[static_cast<size_t>(v)];
      b.height = spacing.node_height;
      b.layer = static_cast<int>(l);
      x += b.width + spacing.node_gap;
    }
  }
  out.width = widest + 2 * spacing.margin;
  out.height = static_cast<double>(layers) * spacing.node_height + static_cast<double>(layers - 1) * spacing.layer_gap +
               2 * spacing.margin;
  return out;
}

}  // namespace npufuse::report
