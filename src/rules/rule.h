#pragma once
// A fusion rule as npufuse reads it: rules/<family>/<name>.py parsed with the
// frontend (never executed). The `RULE = {...}` literal gives the metadata,
// the module docstring the English documentation, and the `search*` /
// `replace` / `naive*` functions stay as AST for the matcher and the
// rewriter. rules/README.md documents the format.
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "model/source_set.h"

namespace npufuse::rules {

struct Prerequisite {
  std::string id;
  std::string en;
  std::string zh;
  bool mechanical = false;  // `npufuse apply` performs it
  // Empty: every match needs it. Else the kind of match that needs it, for
  // a rule whose chain may join two decoder layers (RULE["match"]
  // ["across_layers"]): "within_layer" (the chain lies in one layer),
  // "across_layers" (it does not), "into_next_layer" (its last step is the
  // next layer's input norm) or "into_final_norm" (the norm after the loop).
  std::string seam;
};

struct NearMiss {
  std::string file;    // relative to the rule's folder ("fixtures/x_nomatch_y.py")
  std::string reason;  // why it must not match, in the rule author's words
};

// An operator this pattern must not be mapped to (RULE["rejects"]).
struct Reject {
  std::string api;
  std::string en;     // why not
  std::string zh;
  std::string needs;  // what would be needed instead
  // Rules whose candidates this reject leaves alone: they match the same
  // chain and handle what the reject is about themselves (a Gemma add+norm
  // rule that folds 1 + w into the gamma it passes).
  std::vector<std::string> spares;
  int line = 1, col = 1;  // where the reject is written, for load errors
};

// One documentation section ("What it does", "Why", ...), in order.
struct DocSection {
  std::string heading;
  std::string body;  // dedented, trailing whitespace stripped
};

struct Rule {
  std::string id;       // "<family>.<file stem>"
  std::string family;   // folder name
  std::string module;   // attention, kv_cache, rope, norm, ffn, moe_gate, ... (README table)
  std::string title;
  std::vector<std::string> apis;      // torch_npu operators the replacement emits
  std::vector<std::string> stages;    // subset of prefill, decode
  std::string safety;                 // safe | needs_prerequisites | display_only
  std::vector<Prerequisite> prerequisites;
  std::vector<std::string> checks;    // "api:*" or "api:constraint_id"
  std::map<std::string, std::string> facts;  // fact name -> literal text (as written)
  std::string when;                   // optional condition on facts, as written
  // RULE["operand_facts"]: facts as the operator sees its operands where they
  // differ from the model's (MLA's absorbed attention: head_dim is
  // kv_lora_rank, one KV head); fact name -> expression over facts, as written.
  std::map<std::string, std::string> operand_facts;
  std::vector<Reject> rejects;
  std::vector<std::string> hint_class_names;
  std::vector<std::string> hint_hub_kernels;
  std::vector<NearMiss> near_misses;
  // RULE["match"], optional: options for the matcher (optional steps,
  // limits on consumers of returned values, ...), as plain JSON converted
  // from the literal. Its keys are defined and checked by match/ and
  // documented in rules/README.md.
  nlohmann::json match = nlohmann::json::object();
  // RULE["apply"], optional: how `npufuse apply` places the replacement.
  // built_once: locals of `replace` computed once per module, at the end of
  // the class's __init__ (a rewrite that cannot build one there is refused);
  // init_bindings: for a parameter no call-time value binds, its spellings in
  // that __init__, tried in order (rules/README.md, "RULE[\"apply\"]").
  std::vector<std::string> built_once;
  std::vector<std::pair<std::string, std::vector<std::string>>> init_bindings;
  // decorators: a decorator of the chain's function known to change the
  // module before a call only for some configurations (transformers'
  // `dynamic_rope_update`, for the dynamic-NTK and LongRoPE types). The first
  // of `config_keys` present in the config gives the setting ("default" when
  // none is); the decorator is harmless unless the setting contains one of
  // `stale_when`. Any other decorator refuses what built_once builds.
  struct ConfigDecorator {
    std::string name;
    std::vector<std::string> config_keys;
    std::vector<std::string> stale_when;
  };
  std::vector<ConfigDecorator> decorators;
  // The whole RULE literal as JSON, keys in source order: what `rules show
  // --json` prints and what the numeric check's inputs/sizes/dtypes live in.
  nlohmann::ordered_json literal = nlohmann::ordered_json::object();
  std::vector<DocSection> doc_en;  // from the module docstring (first line = summary)
  std::vector<DocSection> doc_zh;  // from RULE["doc_zh"]
  std::string summary_en;          // the docstring's first line
  std::string summary_zh;

  // The rule file, parsed on its own (every rule file defines `search` and
  // `replace`, so each has its own SourceSet); the functions below point into it.
  std::string path;  // "rules/norm/rms_norm.py" (embedded) or the file given
  const model::SourceSet* sources = nullptr;
  const model::ModelFile* file = nullptr;
  std::vector<const frontend::ast::FunctionDef*> searches;  // search, search_*, in file order
  const frontend::ast::FunctionDef* replace = nullptr;
  std::vector<const frontend::ast::FunctionDef*> naives;    // naive*, never matched
  // lookalike*: forms that resemble the chain but compute something else (a
  // sign-flipped rotate_half); a model spelling one is told the near-miss
  // reason RULE["match"]["lookalikes"] links it to, never matched.
  std::vector<const frontend::ast::FunctionDef*> lookalikes;
};

}  // namespace npufuse::rules
