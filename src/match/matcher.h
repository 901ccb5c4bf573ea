#pragma once
// Matching compiled patterns against a model function's dataflow (usually a
// module's forward with submodules and helpers inlined, see
// model::build_inlined_forward). The evidence is always the dataflow: op
// names, the way values connect, constants. Class names and HF hub-kernel
// decorators only raise the confidence of a match that the dataflow already
// proved.
//
// The matcher sees through casts (`.float()`, `.to(dtype)`, `type_as`) and
// layout-only views the pattern does not mention, tries both operand orders
// of commutative ops (add, mul, ...), lets a pattern step be optional where
// the rule marks it so, and treats each `search*` alternative as its own
// pattern. When a pattern starts to match and then fails, the deepest
// failure is kept as a near-miss with a readable trace.
#include <map>
#include <string>
#include <vector>

#include "match/pattern.h"
#include "model/dataflow.h"

namespace npufuse::match {

// A model value a pattern parameter was bound to.
struct Binding {
  std::string parameter;  // the search function's parameter name
  int value = -1;         // value id in the target graph
  std::string text;       // the model expression it came from ("self.input_layernorm.weight", "hidden_states")
  // The value whose name `text` spells when the chain reads `value` through
  // a name unpacked from a tuple (`attn_out, _ = self.attn(x)` reads the
  // projection the inlined forward returned, unnamed or named in that
  // forward); -1 otherwise.
  int spelled = -1;
  // The named value a chain op reads when that is `value` after casts the
  // match looked through, outside the chain (`q_pe = apply_rotary_emb(...)`
  // returning `y.to(dtype)`): a second spelling, of the value the model code
  // passes on; -1 when none.
  int cast_read = -1;
};

// A value computed inside the matched ops that something outside them also
// reads: returned by the function, stored on self / in a cache, passed to a
// hook or a debug output, or consumed by another op. A fused replacement
// would no longer produce it.
struct Escape {
  int value = -1;
  int consumer_op = -1;   // -1 when it escapes by `return`
  std::string how;        // "returned", "stored on self", "read by <op> @line", ...
  int line = 0;
  int line_op = -1;       // the op whose line `line` is
  // The search's name of the value when the fused operator also returns it
  // (RULE["match"]["also_outputs"]); empty otherwise.
  std::string also_output;
};

struct Match {
  const Pattern* pattern = nullptr;
  const model::FunctionDataflow* target = nullptr;
  std::vector<int> ops;            // target op ids the pattern covers (sorted)
  std::vector<int> anchors;        // target value ids matched to the pattern's anchors, in order
  std::vector<Binding> bindings;   // one per pattern parameter, in parameter order
  std::vector<Escape> escapes;     // intermediate values used outside the match
  // Where the matched ops are: the first and last line per file (one entry
  // per file touched, in the order the ops appear).
  std::vector<model::SourceSpan> spans;
  // Non-empty when the match goes through one branch of an `if` whose other
  // branch computes something else: the conditions it needs, joined by " and ".
  std::string condition;
  // Branch merges the match entered through the arm holding an optional step
  // whose other arm is the same chain without it (`if mask is not None:
  // scores = scores + mask`): the match holds either way (no condition).
  std::vector<int> optional_merges;
  // The casts and layout views passed on the way back from an op of the chain
  // to a parameter's value (`q_pe = out.type_as(x)` read for the parameter
  // bound to `out`), where `ops` holds them: the chain takes them over.
  std::vector<int> binding_passed;
  double confidence = 1.0;           // < 1 when only part of the pattern is optional-matched
  std::vector<std::string> hints;    // class names / decorators that agreed ("class LlamaRMSNorm")
};

// A failed attempt that got far enough to be worth telling the user about.
struct NearMissTrace {
  const Pattern* pattern = nullptr;
  int anchor_op = -1;                 // the target op the attempt started from
  int matched_steps = 0;              // pattern ops matched before the failure
  int pattern_steps = 0;              // pattern ops in total
  // What users read: the rule's explanation of the case when it has one
  // (RULE["match"]["explain"]), followed by the finding in parentheses.
  std::string reason;
  std::string finding;                // the matcher's own words: "expected mean(...), found sum(...) at model.py:53"
  std::vector<std::string> trace;     // the steps tried, outermost first; only with MatchOptions::traces
  std::vector<model::SourceSpan> spans;
};

struct MatchResult {
  std::vector<Match> matches;
  std::vector<NearMissTrace> near_misses;  // only those matching at least half of the pattern
};

class MatchMemo;

struct MatchOptions {
  // Near-misses that matched fewer than this share of the pattern's ops are dropped.
  double near_miss_min_share = 0.5;
  // Skip a pattern on a function when the function lacks the op names any
  // match or near-miss would need (pattern_needs.h). Only tests turn it off,
  // to show that it changes nothing.
  bool rule_out_early = true;
  // Walks remembered from graphs of the same code (match_memo.h); shared by
  // the models of a tree scan. Null: every graph is matched in full.
  MatchMemo* memo = nullptr;
  // Near-misses carry the steps their walk tried (NearMissTrace::trace). For
  // tests and debugging: no plan shows them, and writing each step's places
  // for every near-miss of a tree scan cost about 2 % of it.
  bool traces = false;
};

// Every non-overlapping match of any of `patterns` (alternatives of one rule
// or many rules) in `target`. Two alternatives that cover the same ops give
// one match (the first alternative in file order).
MatchResult match_patterns(const std::vector<Pattern>& patterns, const model::FunctionDataflow& target,
                           const MatchOptions& options = {});

}  // namespace npufuse::match
