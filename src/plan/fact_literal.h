#pragma once
// A rule's fact binding (RULE["facts"]) is kept as the literal text the rule
// wrote ('BNSD', 3, True); this reads it as a fact value.
#include <optional>
#include <string_view>

#include "check/value.h"

namespace npufuse::plan {

// Strings in either quote, ints, floats, True/False, and flat lists of
// those; nullopt for anything else (None included: a binding to None says
// nothing).
std::optional<check::Value> parse_fact_literal(std::string_view text);

}  // namespace npufuse::plan
