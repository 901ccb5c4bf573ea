#pragma once
// From matches to candidates: one candidate per (rule, source span), however
// many classes inline that chain; its stages, its constraint checks with the
// facts of each stage, its status and what decides it, and the minimal
// verification cut.
#include <map>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "check/facts.h"
#include "model/branches.h"
#include "model/function_index.h"
#include "model/module_tree.h"
#include "model/subchains.h"
#include "plan/model_matches.h"
#include "plan/plan.h"

namespace npufuse::plan {

struct CandidateContext {
  const catalog::Catalog* catalog = nullptr;
  const check::FactSet* facts = nullptr;  // the deployment's (deployment_facts)
  std::string requested_stage = "both";   // prefill | decode | both
  const std::vector<model::BranchCondition>* branches = nullptr;  // may be null
  model::CoreLayout attention_layout;     // layout at the attention core, from the sub-chains
  const model::ModelStructure* structure = nullptr;  // instance tree: sizes of the modules a chain reads (chain_facts)
  model::FunctionIndex* functions = nullptr;  // the model's functions by file, listed once; may be null
};

struct CandidateSet {
  std::vector<Candidate> candidates;  // in workflow order
  std::vector<std::string> notes;     // matches left out, and why
  std::map<std::string, std::vector<std::string>> rules_awaiting_facts;  // Plan::rules_awaiting_facts
};

CandidateSet build_candidates(const std::vector<MatchSite>& matches, const CandidateContext& context);

// Near-misses worth telling: each is put on the not_applicable candidate
// whose span it overlaps (another rule matched there and was refused), or
// becomes a note where nothing matched. A near-miss is dropped where its own
// rule matched the same place, or where an applicable candidate covers it.
// With `functions`, a near-miss explains a candidate only when it is located
// (its first reported line) in a function one of the candidate's parts is in.
void attach_near_misses(const std::vector<NearMissSite>& near_misses, std::vector<Candidate>& candidates,
                        std::vector<std::string>& notes, model::FunctionIndex* functions = nullptr);

// Whether a near-miss is located (its first reported line) in the function
// that holds `where`; true when `functions` is null (nothing to ask).
bool near_miss_in_function(const NearMissSite& n, const Location& where, model::FunctionIndex* functions);

// A rule's catalog checks in each of `stages`, with the context's facts, the
// rule's own and the stage's (for a candidate no match produced).
std::vector<CheckResult> rule_checks(const rules::Rule& rule, const CandidateContext& ctx,
                                     const std::vector<std::string>& stages, std::vector<std::string>& evidence);

// The fixed order of modules in the plan (the workflow's), for sorting.
int module_rank(const std::string& module);

// Whether two file:line ranges share a line.
bool overlaps(const Location& a, const Location& b);
// overlaps(a, location of b), without copying b's file name.
bool overlaps(const Location& a, const model::SourceSpan& b);

}  // namespace npufuse::plan
