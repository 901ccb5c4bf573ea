#pragma once
// KV-cache steps behind `cache.update(k, v, ...)`. When the analysed files
// define the update method that writes the cache (a local DynamicKVCache or
// StaticLayerCache class), its writes are already candidates where they
// happen, so the call's steps are covered by them and only noted. Otherwise
// the call is opaque: the cache
// class (HF DynamicCache) is defined outside the analysed files, so no
// pattern can see how it stores keys and values, yet the call is exactly
// where expert ports put a static cache written in place by kv_len
// (scatter_update_). Such steps are not new-operator requirements: they
// become one candidate_with_prerequisites per call, under the rule that
// names the static-cache refactor (kv_cache.static_cache_prerequisite), with
// a prerequisite saying the cache class is opaque and what to replace it by.
#include <vector>

#include "model/kv_cache.h"
#include "plan/candidate_builder.h"
#include "plan/plan.h"
#include "rules/rule.h"

namespace npufuse::plan {

// Rewrites the no_fused_op kv_cache candidates (`uncovered`) whose lines hold
// a `cache_update` access: dropped with a note when a matched candidate
// (`matched`) writes the cache inside a local `*.update` method, else one
// static-cache candidate per call; `rule` null leaves the opaque ones as they are.
void resolve_opaque_cache_steps(std::vector<Candidate>& uncovered, const std::vector<Candidate>& matched,
                                const model::CacheOrganisation& cache, const rules::Rule* rule,
                                const CandidateContext& ctx, std::vector<std::string>& notes);

}  // namespace npufuse::plan
