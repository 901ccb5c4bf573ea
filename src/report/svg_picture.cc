#include "report/svg_picture.h"

#include <fmt/format.h>

#include "report/html_escape.h"
#include "report/svg_layout.h"

namespace npufuse::report {
namespace {

const CandidateMark* mark_of(const PictureNode& node, const CandidateMarks& marks) {
  if (node.candidate < 0 || static_cast<size_t>(node.candidate) >= marks.size()) return nullptr;
  return &marks[static_cast<size_t>(node.candidate)];
}

std::string node_svg(const PictureNode& node, const NodeBox& box, const CandidateMark* mark) {
  std::string tooltip = node.detail;
  if (mark) tooltip += " — " + mark->title;
  std::string shape = fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" rx=\"5\"/>"
      "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text><title>{}</title>",
      box.x, box.y, box.width, box.height, box.x + box.width / 2, box.y + box.height / 2 + 4, escape_html(node.label),
      escape_html(tooltip));
  if (!mark) return fmt::format("<g class=\"node\">{}</g>\n", shape);
  return fmt::format("<a href=\"#{0}\"><g class=\"node chain st-{1}\" data-candidate=\"{0}\">{2}</g></a>\n",
                     escape_html(mark->anchor), escape_html(mark->status), shape);
}

}  // namespace

double label_width(const std::string& label) {
  // Monospace 11px: about 6.7 px per character, plus padding.
  return 16 + 6.7 * static_cast<double>(label.size());
}

std::string builtin_svg(const PictureGraph& graph, const CandidateMarks& marks, const std::string& picture_id) {
  LayoutGraph lg;
  for (const PictureNode& n : graph.nodes) lg.widths.push_back(label_width(n.label));
  lg.edges = graph.edges;
  Layout layout = layered_layout(lg);

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"dataflow\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0:.0f} {1:.0f}\" role=\"img\">\n"
      "<defs><marker id=\"{2}-arrow\" viewBox=\"0 0 8 8\" refX=\"8\" refY=\"4\" markerWidth=\"6\" markerHeight=\"6\" "
      "orient=\"auto\"><path d=\"M0,0 L8,4 L0,8 z\"/></marker></defs>\n",
      layout.width, layout.height, escape_html(picture_id));
  out += "<g class=\"edges\">\n";
  for (auto [from, to] : graph.edges) {
    if (from < 0 || to < 0 || static_cast<size_t>(from) >= layout.nodes.size() ||
        static_cast<size_t>(to) >= layout.nodes.size())
      continue;
    const NodeBox& a = layout.nodes[static_cast<size_t>(from)];
    const NodeBox& b = layout.nodes[static_cast<size_t>(to)];
    if (b.layer <= a.layer) continue;  // an edge the layout found closing a cycle
    double x1 = a.x + a.width / 2, y1 = a.y + a.height, x2 = b.x + b.width / 2, y2 = b.y;
    double bend = (y2 - y1) / 2;
    out += fmt::format("<path d=\"M{:.1f},{:.1f} C{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\" marker-end=\"url(#{}-arrow)\"/>\n",
                       x1, y1, x1, y1 + bend, x2, y2 - bend, x2, y2, escape_html(picture_id));
  }
  out += "</g>\n";
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    out += node_svg(graph.nodes[i], layout.nodes[i], mark_of(graph.nodes[i], marks));
  out += "</svg>\n";
  return out;
}

}  // namespace npufuse::report
