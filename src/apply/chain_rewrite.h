#pragma once
// One candidate's chain turned into one edit: the smallest run of
// statements of the innermost block (function body, or an if/for/with/try
// clause) that holds the chain's ops is replaced by the rule's `replace`
// body, bound to the model's expressions. A statement that uses a result
// inside a larger expression stays, reading the name the replacement
// assigns. Anything this
// cannot do safely is refused with the reason and the place, so it can be
// listed as a manual step instead.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "apply/edits.h"
#include "apply/source_functions.h"
#include "model/model_config.h"
#include "model/source_set.h"
#include "plan/plan.h"
#include "rules/rule.h"

namespace npufuse::apply {

struct ChainRewrite {
  std::optional<Edit> edit;   // the chain's statements replaced
  std::vector<Edit> buffers;  // register_buffer lines in the class's __init__ (module_buffer.h), when the
                              // replacement reads a tensor built once
  std::string refusal;  // why there is no edit
  std::string where;    // file:line the refusal is about
  // Config branches folded to make the chain's statements one run
  // (apply/config_fold.h): (file:line, what was done).
  std::vector<std::pair<std::string, std::string>> folded;
  // With kept_in_place: the chain's results inside the statements that end
  // the run and stay (`out = h + self.mlp(<norm result>)`), each replaced
  // where it is by the name the replacement assigns; `edit` then ends
  // before those statements.
  std::vector<Edit> kept;
};

// The model function's spelling of each binding (replace parameter ->
// expression text inside fn). When the chain was matched with `fn` inlined
// into a caller, the bindings are the caller's expressions: they are mapped
// through the call's arguments to fn's parameter names. Sets `missing` and
// returns {} when a binding has no spelling inside fn.
std::map<std::string, std::string> arguments_in(const FunctionAt& fn, const plan::Candidate& c,
                                                const model::SourceSet& sources, std::string& missing);

// `config`: the config the plan was made with, or null (module_buffer.h).
ChainRewrite rewrite_chain(const plan::Candidate& candidate, const model::SourceSet& sources, const rules::Rule& rule,
                           const model::ModelConfig* config = nullptr, bool kept_in_place = false);

}  // namespace npufuse::apply
