#pragma once
// The part of a rewrite built once per module instead of on every call.
//
// A statement of a rule's `replace` that reads none of its call-time values
// is the same tensor on every call. Two kinds qualify:
//  - constants, which read no parameter nor local at all (FIA's
//    `causal_mask_2048 = torch.triu(...)`), in every rule;
//  - statements over init-time values, in rules whose RULE["apply"] names
//    `built_once` locals (the rotary tables `cos_cached`/`sin_cached`). An
//    init-time value is a parameter bound to `self.<attr>` that only the
//    class's __init__ sets, as a plain attribute or a non-persistent buffer,
//    or a parameter RULE["apply"]["init_bindings"] spells in that __init__
//    (`config.max_position_embeddings`).
// When the chain sits in a method, those statements move to the end of the
// class's __init__: a value the call-time part reads becomes a
// non-persistent buffer (state_dict and checkpoints are unchanged, and it
// follows the module's `.to(device)`), read as `self.<name>`; a value only
// other init-time statements read stays a local of __init__.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "apply/edits.h"
#include "apply/source_functions.h"
#include "frontend/ast.h"
#include "model/model_config.h"
#include "model/source_set.h"
#include "rules/rule.h"

namespace npufuse::apply {

// A statement of `replace` that can run in __init__.
struct InitStatement {
  std::string name;                            // the local it assigns
  const frontend::ast::expr* value = nullptr;  // its value, in the rule's source
  bool buffer = false;  // read by the call-time part: a registered buffer; else a local of __init__
};

struct InitSplit {
  std::vector<InitStatement> statements;           // in replace's order
  std::map<std::string, std::string> call_time;  // each call-time parameter and local -> why it is one
};

// Splits `replace` into what can run in __init__ and what cannot:
// `init_params` are the parameters with a value there; `why_not` says, for
// the others, why not (carried to the locals that read them). An init-time
// statement no buffer needs stays with the call-time part.
InitSplit split_init_time(const frontend::ast::FunctionDef& replace, const std::set<std::string>& init_params,
                          const std::map<std::string, std::string>& why_not);

struct ModuleBuffers {
  std::vector<Edit> edits;                    // the statements added to __init__
  std::map<std::string, std::string> reads;   // local -> "self.<name>", for the replacement
  std::set<std::string> left_out;             // locals of replace that only __init__ computes
  std::string refusal;                        // why the rewrite cannot be done so
};

// Moves the init-time statements of `rule`'s replace to the end of the
// __init__ of `fn`'s class. `arguments` are the call-time bindings (replace
// parameter -> expression text inside fn). `config` (may be null: the plan
// was made without one) decides the rule's config-dependent decorators.
ModuleBuffers module_buffers(const FunctionAt& fn, const model::SourceSet& sources, const rules::Rule& rule,
                             const std::map<std::string, std::string>& arguments, const std::string& candidate,
                             const model::ModelConfig* config = nullptr);

}  // namespace npufuse::apply
