#pragma once
// RULE["match"]: what a rule tells the matcher beyond its search functions.
// rules/README.md documents the keys; anything else is an error.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "rules/rule.h"

namespace npufuse::match {

// Limits on who may read one of the values the pattern returns.
struct AnchorUse {
  size_t anchor = 0;                 // index into the pattern's returned values
  std::set<std::string> allow;       // op names outside the match that may read it; "return" for a return
};

// A near-miss the rule author has explained: when the matcher's finding
// contains `when`, users read `reason` (the RULE["near_misses"] entry of the
// fixture that shows the case) followed by the finding.
struct NearMissExplanation {
  std::string when;
  std::string reason;
};

// How a fused operator returns a value its chain computes on the way.
struct AlsoOutput {
  std::string en;
  std::string zh;
};

struct RuleMatchOptions {
  // Pattern steps with these op names may be absent in the model: the
  // matcher then continues with the step's first input.
  std::set<std::string> optional;
  std::vector<AnchorUse> anchor_uses;
  // Parameter -> op names whose results the parameter may not be bound to
  // (a residual that is really `x * alpha` is no plain residual).
  std::map<std::string, std::set<std::string>> not_from;
  // Parameter -> op names one of which must compute the parameter's value
  // (seen through casts only): QK-norm's input is the per-head view of a
  // projection, never the hidden state itself.
  std::map<std::string, std::set<std::string>> only_from;
  // Parameter -> the axis order ("BSND" or "BNSD") its value must have, as
  // the code shows it (match/value_layout): a cache appended along axis 1
  // grows the sequence only in BSND. Unknown refuses.
  std::map<std::string, std::string> layouts;
  // In the order written: the first whose `when` occurs in a finding explains it.
  std::vector<NearMissExplanation> explain;
  // Findings that show the code is something else altogether (a concatenation
  // along the last axis is no cache append): a failed attempt whose finding
  // contains one of these is not told. RULE["match"]["quiet"], each with its why.
  std::vector<std::string> quiet;
  // Model ops that already compute the whole pattern as one fused call
  // (F.layer_norm for a hand-written LayerNorm): each is told as a near-miss.
  std::set<std::string> already_fused;
  // The returned values are computed independently by a per-tensor operator
  // (RoPE on q and on k): a model that computes only some of them matches
  // with those, and the parameters only the others read stay unbound.
  bool partial_returns = false;
  // The returned values are computed each from its own input (q's and k's
  // norm): none may be computed from another. Implied by partial_returns.
  bool independent_returns = false;
  // Rule ids whose chains this rule's chain contains as a part (DeepSeek's
  // de-interleave + rotate_half is interleaved RoPE, not half RoPE): a match
  // of theirs lying wholly inside one of this rule's is no chain of its own.
  std::set<std::string> contains;
  // The pattern's method calls stand for code outside the analysed file (HF
  // Cache.update): a model whose own classes define that method is not this
  // case, its code is analysed instead.
  bool opaque_calls = false;
  // The chain may run across two decoder layers (one layer's residual add
  // into the next layer's input norm): in a forward whose layer loop is
  // unrolled (model::build_inlined_forward), its walks start inside the
  // copies of the loop body too; every other rule's start only around them.
  bool across_layers = false;
  // Parameters the model may lack (a shared expert's output added to the
  // routed sum): the pattern step that combines one of them with another
  // value (`routed + shared`) may be missing, and the match then goes on
  // with that other value, the parameter left unbound.
  std::set<std::string> optional_inputs;
  // The share of the pattern's steps a failed walk must pair to be told as a
  // near-miss, in place of the matcher's default (MatchOptions). A rule whose
  // near-misses differ near the returned value (a sign flip in `x*cos -
  // rot*sin` is met at the first ops walked) sets it lower, so they are told.
  std::optional<double> near_miss_share;
  // A `lookalike*` function of the rule file -> the reason RULE["near_misses"]
  // gives the fixture it names. Each look-alike is compiled like a search
  // function; where it matches and the rule does not, the rule's near-miss
  // is told with this reason.
  std::map<std::string, std::string> lookalikes;
  // A value the search computes on the way (by its name there) -> how the
  // fused operator also returns it (`c_q`: npu_mla_prolog_v3's query_norm
  // with query_norm_flag=True). A model that reads that value elsewhere
  // takes it from the operator, so the read is no intermediate to keep.
  std::map<std::string, AlsoOutput> also_outputs;
};

// Reads rule.match; throws rules::RuleError ("<rule path>: RULE["match"]: ...")
// on an unknown key or a value of the wrong shape.
RuleMatchOptions parse_match_options(const rules::Rule& rule);

}  // namespace npufuse::match
