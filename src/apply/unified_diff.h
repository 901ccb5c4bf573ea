#pragma once
// Unified diffs of a patch, in the form `git apply` and `patch -p1` accept.
// The hunks come straight from the edits (each edit widened to whole lines,
// three lines of context), so no line-matching heuristics are involved and
// the diff says exactly what the patch changes.
#include <string>
#include <vector>

#include "apply/edits.h"

namespace npufuse::apply {

// The diff of one file: `a/<shown_path>` -> `b/<shown_path>`. Empty when
// there are no edits. `sorted` as returned by sorted_edits().
std::string unified_diff(const std::string& shown_path, const std::string& original, const std::vector<Edit>& sorted);

}  // namespace npufuse::apply
