#pragma once
// The `thread_residual` refactor: an add+RMSNorm chain found across the
// unrolled layer loop (a decoder layer's last residual add into the next
// layer's input norm, or the last layer's into the final norm) can only be
// one npu_add_rms_norm once the layer hands its last add to the caller
// instead of doing it:
//
//   - the layer's forward takes `npu_residual=None`; when it is given, the
//     layer first computes `normed, _, x = npu_add_rms_norm(npu_residual, x,
//     <input norm's weight, eps>)` and its input-norm call reads `normed`
//     (the first layer, given None, keeps its plain norm);
//   - its last add `A + B` becomes `npu_residual = A` and `B`, and the
//     layer returns `npu_residual` as one more value;
//   - the backbone's loop starts with `npu_residual = None` and passes it on
//     (`h, npu_residual = layer(h, ..., npu_residual=npu_residual)`);
//   - after the loop, the final norm is the fused call too, or, when that
//     candidate is not chosen, the pending add is done in plain torch.
//
// Each chosen candidate of one layer class is served by the same edits.
// Anything outside the shapes above is refused with the reason and place.
#include <string>
#include <vector>

#include "apply/edits.h"
#include "model/source_set.h"
#include "plan/plan.h"

namespace npufuse::apply {

struct ThreadedResidual {
  std::vector<Edit> edits;            // empty when refused
  std::vector<std::string> candidates;  // the seam candidates this is about: the edits perform them all
  std::string refusal;                // why there are no edits
  std::string where;                  // file:line the refusal is about
};

// Whether apply performs `c` through this refactor: an add_rms_norm chain
// across the unrolled layer loop.
bool threads_residual(const plan::Candidate& c);

// `seams` are the chosen candidates for which threads_residual() holds,
// all of one model. They are grouped by the layer add they start from, and
// each group is done (or refused) on its own: one result per group.
std::vector<ThreadedResidual> thread_residual(const std::vector<const plan::Candidate*>& seams,
                                              const model::SourceSet& sources);

}  // namespace npufuse::apply
