#pragma once
// One rule's chain can take in the chains of others: the MC2 combine fused
// with the next layer's add+RMSNorm (moe.experts_distribute_add_rms_norm)
// rewrites every op of moe.experts_distribute and of the seam's
// norm.add_rms_norm. The three stay separate candidates (on a chip without
// the longer operator the two shorter ones are the chain), and each says how
// it relates to the others.
#include <vector>

#include "plan/plan.h"

namespace npufuse::plan {

// For each pair of candidates of different rules where every op one
// rewrites is rewritten by the other too (and the other rewrites more), adds
// an evidence line to both: the longer one names what it takes in, the
// shorter one names the longer chain, with its status where that is not
// applicable. Candidates without known ops are left alone.
void link_longer_chains(std::vector<Candidate>& candidates);

}  // namespace npufuse::plan
