#pragma once
// The `RULE = {...}` literal of a rule file read strictly into rules::Rule:
// every key must be known and of its type, ids and enumerations must be
// valid; each problem is recorded as file:line:col and reading goes on.
#include <string>

#include "model/source_set.h"
#include "rules/load_errors.h"
#include "rules/rule.h"

namespace npufuse::rules {

// Fills the metadata fields of `rule` (id, module, ..., literal); `rule.family`
// and the file stem decide what `id` must be.
void read_rule_metadata(const model::ModelFile& file, const frontend::ast::Dict* literal, const std::string& stem,
                        Rule& rule, LoadErrors& errors);

// The allowed values, shared with the documentation and the tests.
const std::vector<std::string>& rule_modules();     // attention, kv_cache, rope, ...
const std::vector<std::string>& rule_safeties();    // safe, needs_prerequisites, display_only
const std::vector<std::string>& rule_stages();      // prefill, decode

}  // namespace npufuse::rules
