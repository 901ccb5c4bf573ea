#pragma once
// Running every rule over the model: each nn.Module class's forward with its
// submodules and helpers inlined, and each module-level function on its own.
// The same source chain is usually seen several times (the norm's own
// forward, then again inside every block that inlines it); dedupe happens
// later, on (rule, source span). A forward that loops over the decoder
// layers (the backbone's) is built with that loop unrolled
// (model::build_inlined_forward): from that graph only the matches that take
// ops from both copies of the loop body, or from the second copy and the code
// after the loop, are kept besides those of the code around the loop alone
// (the rest are the layer's own, found in its forward), and no near-miss that
// starts inside a copy.
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "match/match_memo.h"
#include "match/matcher.h"
#include "model/module_roles.h"
#include "rules/ruleset.h"

namespace npufuse::plan {

struct MatchSite {
  match::Match match;
  std::string function;     // "LlamaRMSNorm.forward" or "apply_rotary_pos_emb"
  std::string owner_class;  // empty for a module-level function
};

struct NearMissSite {
  match::NearMissTrace trace;
  std::string function;
};

// Every rule's patterns, in rule order. Compiled once and then only read:
// a tree scan shares one set between its worker threads.
using CompiledPatterns = std::shared_ptr<const std::vector<match::Pattern>>;
CompiledPatterns compile_patterns(const rules::RuleSet& rules);

struct ModelMatches {
  CompiledPatterns patterns;                   // matches point here
  std::deque<model::FunctionDataflow> graphs;  // the targets; matches point here
  std::vector<MatchSite> matches;
  std::vector<NearMissSite> near_misses;
};

// `config` resolves dispatch tables keyed by config values (attn_implementation),
// as the inventory does; it may be null. `patterns` are `rules` compiled;
// when null they are compiled here. `memo` (for `patterns`) lets graphs of
// code already matched elsewhere walk only what gave something there.
// `built` holds inlined forwards already built with the same roles and
// config (the inventory's block forward), by class name: they are used, not
// built again. The graphs are matched on `threads` workers (0: one per core;
// a tree scan that runs models in parallel passes 1); the result is the same
// whatever the number.
ModelMatches match_model(const model::SourceSet& sources, const model::RoleTable& roles, const rules::RuleSet& rules,
                         const model::ModelConfig* config = nullptr, CompiledPatterns patterns = nullptr,
                         match::MatchMemo* memo = nullptr, std::map<std::string, model::FunctionDataflow> built = {},
                         unsigned threads = 1);

}  // namespace npufuse::plan
