#pragma once
// The `merge_gate_up` prerequisite of ffn.swiglu, done mechanically: the
// module's separate gate and up projections become one `gate_up_proj` layer
// of twice the width (gate rows first), a load-time hook concatenates the
// checkpoint's two weights (and biases) into it, and the forward calls
// npu_swiglu on the merged projection. Old checkpoints keep loading.
#include <optional>
#include <string>
#include <vector>

#include "apply/edits.h"
#include "model/source_set.h"
#include "plan/plan.h"

namespace npufuse::apply {

struct MergeGateUp {
  std::vector<Edit> edits;  // __init__ and forward
  Edit helper;              // the hook factory, once per file
  std::string refusal, where;
};

// The name of the module-level hook factory the patch adds.
inline constexpr const char* kMergeHookName = "_npufuse_merge_on_load";

MergeGateUp merge_gate_up(const plan::Candidate& candidate, const model::SourceSet& sources);

}  // namespace npufuse::apply
