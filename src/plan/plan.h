#pragma once
// Workflow steps 2-4 as data: the candidate list and the review. The plan
// is what `npufuse analyze` prints (src/report) and what `apply` and
// `verify` later read back from JSON (docs/analyze-schema.md).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "check/evaluate.h"
#include "check/facts.h"
#include "model/source_set.h"

namespace npufuse::plan {

// The deployment the plan is for (flags, --deploy FILE, config.json).
struct AnalyzeOptions {
  std::vector<std::string> paths;
  std::string config;             // config.json, may be empty
  std::string deploy;             // deployment file, may be empty
  std::string chip;               // A2 | A3 | ... ; empty = unknown
  int tp = 0, ep = 0, dp = 0;     // 0 = not given
  std::string quant;              // bf16 | w8a8 | w8a8c8 | w4a16 ; empty = from the config / unknown
  std::string stage = "both";     // prefill | decode | both
  std::string torch_npu_version;  // empty = unknown
  std::string rules_dir;          // --rules DIR (default: embedded)
  std::string catalog_dir;        // --catalog DIR (default: embedded)
};

enum class Status { Candidate, CandidateWithPrerequisites, NotApplicable, NoFusedOp };
const char* status_name(Status s);  // candidate, candidate_with_prerequisites, not_applicable, no_fused_op

struct Location {
  std::string file;
  int start_line = 0;
  int end_line = 0;
};

// One catalog constraint evaluated for this candidate.
struct CheckResult {
  std::string api;
  std::string constraint_id;
  check::Answer answer = check::Answer::Unknown;
  std::string severity;              // error | warning (the catalog's)
  std::string message_en, message_zh;
  std::string doc;                   // doc file#section
  std::vector<std::string> evidence; // facts it rests on, with provenance
  std::vector<std::string> missing;  // unknown: the facts to ask for
  std::string stage;                 // set when the answer differs between the candidate's stages
};

struct PrerequisiteItem {
  std::string id;
  std::string en, zh;
  bool mechanical = false;
  Location where;  // where the refactor happens, when known
};

// A no_fused_op candidate is a new-operator requirement.
struct NewOperatorRequirement {
  std::string subgraph;              // the semantics, e.g. "sigmoid(x) * x * y, clamped"
  std::vector<std::string> inputs;   // with shapes as known
  std::vector<std::string> outputs;
  std::string dtype, layout;
  std::string why_nothing_fits;      // the evidence
};

struct Candidate {
  std::string id;                    // stable: "<rule id>@<file>:<line>" or "<module>.<step>@<file>:<line>"
  std::string module;                // attention, kv_cache, rope, norm, ffn, moe_gate, moe_routing, moe_experts, mla, indexer, quant, other
  std::string rule;                  // rule id; empty for no_fused_op
  std::string title;
  std::string title_zh;              // the rule's Chinese summary; empty when it has none
  std::vector<std::string> stages;   // prefill, decode
  std::vector<std::string> apis;
  Status status = Status::Candidate;
  Location location;                 // where the replacement goes: the chain's lines in the function it was matched in
  std::vector<Location> extra_locations;  // other places the same chain was matched (one per instance)
  std::vector<Location> parts;       // one file:line range per function the matched ops run through; location is one of them
  std::vector<Location> op_lines;    // the matched ops' own lines (adjacent ones merged); not written to the plan
  std::vector<std::string> op_scopes;  // per op_lines entry, the module path whose code it is; not written to the plan
  std::string instance;              // "model.layers[*].input_layernorm", when known
  std::vector<std::string> evidence; // the matched ops and bindings, in words
  std::vector<std::string> escapes;  // intermediates a fusion would no longer produce
  std::vector<PrerequisiteItem> prerequisites;
  std::vector<CheckResult> checks;
  std::vector<std::string> blocking;     // not_applicable: the hard constraint(s) cited
  std::vector<std::string> missing_facts;  // union of the checks' unknowns: the plan asks for them
  std::string verification_cut;      // the minimal cut to verify: function and lines, inputs, outputs
  std::vector<std::string> near_miss_reasons;  // for not_applicable found by a near-miss
  NewOperatorRequirement requirement;  // no_fused_op only
  double confidence = 1.0;
  // Other rules that recognise the same chain (same module, overlapping location), less
  // preferred than this one, each with its own checks and status; empty
  // inside an alternative (plan/alternatives.h).
  std::vector<Candidate> alternatives;

  // apply's: the matched chain in source terms, so `npufuse apply` can
  // rewrite it. Filled by the analysis (plan/apply_site.cc) and not written
  // to the JSON plan: apply re-runs the analysis the plan records.
  struct SourceRange {
    std::string file;
    uint32_t begin = 0, end = 0;  // bytes of the expression that produced the op
  };
  std::string apply_function;                    // the function whose (inlined) graph matched
  // The chain runs across two decoder layers of an unrolled layer loop (one
  // layer's residual add into the next layer's norm, or the last one's into
  // the final norm): no one function's code holds it.
  bool apply_across_layers = false;
  std::vector<SourceRange> apply_ops;            // the matched computing ops
  // `if` statements (no else) whose body is an optional step of the chain
  // and which the match holds with or without (match::Match::optional_merges):
  // the rewrite may replace them whole.
  std::vector<SourceRange> apply_optional_ifs;
  // Every branch merge the chain passes (phi ops): an `if` or loop statement,
  // or the call of an inlined helper with several returns, whose statement
  // then belongs to the chain.
  std::vector<SourceRange> apply_merges;
  // `if` tests in the chain's files whose value the loaded config fixes
  // (model/config_arms.h: `self.attn_impl == "naive"` with attn_impl =
  // 'absorb'): a chain whose statements straddle such an if may be rewritten
  // with the if folded to the arm the config takes.
  struct ConfigArm {
    SourceRange test;        // the if's test
    bool then_arm = false;   // which arm runs for this config
    std::string condition;   // the test as written
    std::string value;       // what it read ("attn_impl == 'naive' = False")
  };
  std::vector<ConfigArm> apply_config_arms;
  // Intermediates the matched function returns and every caller drops
  // (plan/candidate_builder: no escape where the chain is seen inlined in
  // its callers), by name: the rewrite returns None in their place.
  std::vector<std::string> apply_dropped_returns;
  std::vector<int> apply_op_copies;              // per apply_ops entry, its copy of the unrolled layer loop (0: outside)
  std::vector<SourceRange> apply_outputs;        // producers of the chain's results, in anchor order
  std::vector<std::string> apply_output_names;   // the names those results were bound to ("" when none)
  std::vector<size_t> apply_output_anchors;      // which returned value of the search each result is (partial returns
                                                 // leave some out)
  std::vector<std::pair<std::string, std::string>> apply_bindings;  // replace parameter -> model expression text
  // What produced each bound value (parallel to apply_bindings), so apply can
  // tell whether the binding's text still names that value where the
  // replacement goes (apply/binding_spelling.h).
  struct BindingOrigin {
    enum class Kind {
      Parameter,   // a parameter of the matched function (range: its def)
      Merge,       // names merged after an if or a loop (range: that statement)
      Expression,  // a computing op (range: its expression)
      Unpacked,    // a name a tuple assignment binds (range: that assignment)
      Other,       // attribute reads, literals, tuple plumbing: the text is the value
    };
    Kind kind = Kind::Other;
    SourceRange range;
  };
  std::vector<BindingOrigin> apply_binding_origins;
  // Per binding (parallel to apply_bindings), when the chain took over casts
  // or views between the bound value and the op that reads it: that op's
  // side of them (its spelling and origin) and the ranges of the ops passed.
  // A rewrite that cannot take them over (they lie in a helper its statements
  // do not call) leaves them and binds the reader's side instead.
  struct ReaderSide {
    std::string text;
    BindingOrigin origin;
    std::vector<SourceRange> passed;  // empty: nothing passed, the binding is the reader's side
  };
  std::vector<ReaderSide> apply_binding_readers;
  // Per binding (parallel to apply_bindings): the name the chain's op reads
  // when that is the bound value after casts the match looked through
  // (match::Binding::cast_read), as a spelling to fall back on; `passed` empty,
  // text empty when none.
  std::vector<ReaderSide> apply_binding_cast_reads;
  // Per binding (parallel to apply_bindings): the chain's own views that add
  // unit axes to the bound value before the chain computes with it (the
  // rule's `cos.unsqueeze(1)`, met by the model's `cos[None, None]` or
  // `cos.unsqueeze(0).unsqueeze(0)`), and the value after them, which the
  // chain reads: its spelling and origin, the views' ranges and the axis each
  // added (the model op's own dim, innermost first). That value has the rank
  // the model gives it; apply spells the bound value from it by squeezing
  // those axes again where the bound value has no spelling of its own
  // (apply/binding_spelling.h). `views` empty: the chain reads the bound
  // value otherwise.
  struct ViewedSide {
    std::string text;
    BindingOrigin origin;
    std::vector<SourceRange> views;
    std::vector<int> axes;
    // apply left the views in the model's code (they lie in a caller of the
    // function it rewrites) and bound the parameter to the value after them:
    // its spelling needs the axes squeezed.
    bool left_in_place = false;
  };
  std::vector<ViewedSide> apply_binding_viewed;

  // The model expression bound to a replace parameter; empty when unbound.
  std::string binding(const std::string& parameter) const {
    for (const auto& [p, text] : apply_bindings)
      if (p == parameter) return text;
    return "";
  }
};

// Step 4: the four review items of the analysis stage.
struct ReviewItem {
  std::string id;        // decomposition_complete | reference_matched | constraints_confirmed | candidates_listed
  std::string title_en, title_zh;
  bool passed = false;
  std::vector<std::string> failing;  // what fails, each naming the module/candidate and why
};

// One step of a reference chain as this model meets it (plan/reference_chains.h).
struct ChainStepReport {
  std::string name;        // the chain file's step name
  std::string title_en, title_zh;
  // covered | blocked | open | torch | not_mapped | not_found (chains/README.md)
  std::string status;
  std::vector<std::string> candidates;  // ids of the candidates that decide the status
  std::string detail;      // English: the hard constraint, why nothing fits, or the chain's note
  std::string detail_zh;   // the chain's note in Chinese, when the detail is that note
};

// A reference chain (chains/*.toml) that applies to the model in one stage.
struct ChainReport {
  std::string id;
  std::string title_en, title_zh;
  std::string stage;       // prefill | decode
  std::string source;      // the reference document it summarises
  std::vector<ChainStepReport> steps;
};

struct Plan {
  int schema_version = 2;
  std::string tool_version;
  std::vector<std::string> files;
  std::map<std::string, std::string> file_hashes;  // path -> sha256 of the analysed bytes (apply refuses stale plans)
  AnalyzeOptions options;
  check::FactSet facts;                // everything known, with provenance
  std::vector<std::string> unknown_facts;  // asked for by some check
  std::vector<std::string> assumed_facts;  // set by a stated default (tp = 1 without --tp); the provenance says so
  std::vector<Candidate> candidates;   // in workflow order: attention, kv_cache, rope, norm, ffn, moe_*, mla, indexer, quant, other
  std::vector<ReviewItem> review;
  std::vector<ChainReport> reference_chains;  // per analysed stage, the expert chains that apply and each step's state
  std::vector<std::string> notes;      // unresolved things, said plainly
  // Rules that matched but wait on facts the deployment does not give
  // (RULE["when"] undecided: `ep > 1` without --ep): rule id -> those facts.
  // The notes say it in words; not written to the JSON plan.
  std::map<std::string, std::vector<std::string>> rules_awaiting_facts;
};

}  // namespace npufuse::plan
