#pragma once
// `import torch_npu`, added once to a patched file, where its imports live.
#include <optional>

#include "apply/edits.h"
#include "model/source_set.h"

namespace npufuse::apply {

// The insertion, or nothing when the file already imports torch_npu at top
// level. It goes on the line after the last import of the file's leading
// import block (after the docstring and `from __future__` when there are no
// other imports; at the top of an empty file).
std::optional<Edit> torch_npu_import(const model::ModelFile& file);

}  // namespace npufuse::apply
