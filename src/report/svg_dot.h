#pragma once
// The same picture laid out by graphviz `dot`, when it is installed: dot
// draws larger blocks more readably than the built-in layout. The model's
// text reaches dot only inside quoted, escaped labels of a file we write,
// and dot is started directly (no shell), with a time limit.
#include <optional>
#include <string>

#include "report/svg_picture.h"

namespace npufuse::report {

// The graph in dot's language; node ids are n0, n1, ...
std::string dot_source(const PictureGraph& graph, const CandidateMarks& marks);

// The full path of `dot` on PATH, or empty.
std::string find_dot();

// dot's SVG (from the <svg> element on), or nothing when dot is absent,
// fails or takes longer than `timeout_ms`.
std::optional<std::string> dot_svg(const PictureGraph& graph, const CandidateMarks& marks, int timeout_ms = 10000);

}  // namespace npufuse::report
