#pragma once
// The `stack_expert_weights` prerequisite of moe.experts_grouped_matmul, done
// mechanically: the MoE module's `nn.ModuleList` of SwiGLU experts becomes two
// stacked parameters in the grouped matmul's (K, N) layout,
//
//   self.npu_w_gate_up  [E, H, 2I]   cat(gate_e, up_e).T per expert, gate first
//   self.npu_w_down     [E, I, H]    down_e.T per expert
//
// built in __init__ from the experts the model made (so initialisation and
// shapes are the model's), a load-time hook stacking an old checkpoint's
// per-expert weights into them, and the expert loop rewritten as
// init_routing_v2 -> grouped_matmul -> swiglu -> grouped_matmul ->
// finalize_routing reading the stacked weights (no per-call concatenation).
#include <string>
#include <vector>

#include "apply/edits.h"
#include "model/source_set.h"
#include "plan/plan.h"

namespace npufuse::apply {

struct StackedExperts {
  std::vector<Edit> edits;  // __init__ and the forward
  Edit helper;              // the hook factory, once per file
  std::string expert_class; // the class the experts were made of (no longer called once stacked)
  std::string refusal, where;
};

inline constexpr const char* kStackHookName = "_npufuse_stack_experts_on_load";

StackedExperts stack_expert_weights(const plan::Candidate& candidate, const model::SourceSet& sources);

}  // namespace npufuse::apply
