#pragma once
// The sub-chain steps of each block (model/subchains.h) that no candidate
// covers. A plain projection (q/k/v/o, gate/up, down, the router linear)
// or a lone residual add needs no fused operator of its own and is only
// listed as dismissed; every other uncovered step, and a projection of an
// MLA or indexer chain (a prolog operator would take it in), becomes a
// no_fused_op candidate carrying a new-operator requirement.
#include <deque>
#include <string>
#include <vector>

#include "check/facts.h"
#include "model/function_index.h"
#include "model/subchains.h"
#include "plan/model_matches.h"
#include "plan/plan.h"

namespace npufuse::plan {

struct UncoveredSteps {
  std::vector<Candidate> no_fused_op;
  std::vector<std::string> dismissed;  // "attention.qkv_projection of X at f:l: no fusion needed: plain projection"
};

// `graphs` are the inlined forwards the matcher saw (their op ids are the
// block graphs' ids the steps use); `near_misses` explain why nothing fits:
// only those located in the function that holds the step and touching its
// lines (with `functions` null, touching its lines is enough).
UncoveredSteps find_uncovered_steps(const std::vector<model::BlockChains>& blocks, const std::vector<Candidate>& covered,
                                    const std::deque<model::FunctionDataflow>& graphs,
                                    const std::vector<NearMissSite>& near_misses, const check::FactSet& facts,
                                    const std::string& requested_stage, model::FunctionIndex* functions = nullptr);

// The plan module a step of a sub-chain belongs to ("moe" + "topk" -> "moe_gate").
std::string step_module(const std::string& chain_module, const std::string& step_kind);

}  // namespace npufuse::plan
