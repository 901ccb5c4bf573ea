#pragma once
// The functions of a rule file that npufuse uses: every `search*` alternative
// (a pattern), the one `replace`, and the `naive*` mappings the rule refuses.
// replace must take exactly the parameters of every search alternative,
// because the verifier calls both with the same inputs.
#include "model/source_set.h"
#include "rules/load_errors.h"
#include "rules/rule.h"

namespace npufuse::rules {

// Fills rule.searches / replace / naives from `file`'s top-level definitions.
void read_rule_functions(const model::ModelFile& file, Rule& rule, LoadErrors& errors);

// "a, b, *, eps=..." style text of a parameter list, for messages.
std::string parameter_text(const frontend::ast::FunctionDef& fn);

}  // namespace npufuse::rules
