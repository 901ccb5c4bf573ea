#pragma once
// How apply meets each prerequisite a plan lists. A few it performs; the
// rest become manual steps that say why apply leaves them.
#include <string>

#include "plan/plan.h"

namespace npufuse::apply {

enum class PrerequisiteWay {
  MergeGateUp,    // merge_gate_up.h: one gate_up_proj layer and a load-time hook
  StackExperts,   // stack_expert_weights.h: stacked expert parameters and a load-time hook
  ByTheRewrite,   // the chain rewrite itself meets it (see `why`)
  ModuleBuffer,   // the replacement's constant becomes a registered buffer (module_buffer.h)
  Manual,         // listed as a manual step, with `why`
};

struct PrerequisiteHandling {
  PrerequisiteWay way = PrerequisiteWay::Manual;
  std::string why;  // for ByTheRewrite and Manual: in words
};

PrerequisiteHandling handling_of(const plan::PrerequisiteItem& prerequisite);

}  // namespace npufuse::apply
