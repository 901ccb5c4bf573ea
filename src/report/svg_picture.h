#pragma once
// A block's dataflow picture as inline SVG: each node a box, each op of a
// fusible chain filled with its candidate's status colour and linked to the
// candidate's card on the page. The page's CSS gives the status classes
// their colours (st-candidate, st-candidate_with_prerequisites,
// st-not_applicable, st-no_fused_op).
#include <string>
#include <vector>

#include "report/svg_dataflow_graph.h"

namespace npufuse::report {

// What a node of candidate i links to and how it is coloured; indexed like
// the plan's candidates.
struct CandidateMark {
  std::string anchor;  // the card's element id
  std::string status;  // the status word, also the node's class suffix
  std::string title;   // shown as the node's tooltip
};
using CandidateMarks = std::vector<CandidateMark>;

// Drawn with the built-in layered layout (svg_layout.h).
// `picture_id` names the SVG's own ids (its arrow marker), unique on the page.
std::string builtin_svg(const PictureGraph& graph, const CandidateMarks& marks, const std::string& picture_id);

// Approximate box width of a label in the built-in drawing.
double label_width(const std::string& label);

}  // namespace npufuse::report
