#pragma once
// A Python literal (str, int, float, bool, None, list, tuple, dict with str
// keys, unary minus on a number) read from the AST as JSON. Rule metadata is
// data, so names, calls and arithmetic are errors, never evaluated.
#include <nlohmann/json.hpp>
#include <optional>

#include "model/source_set.h"
#include "rules/load_errors.h"

namespace npufuse::rules {

// The literal's value, or nullopt after recording why it is not a plain literal.
std::optional<nlohmann::ordered_json> literal_to_json(const model::ModelFile& file, const frontend::ast::expr* e,
                                                      LoadErrors& errors);

// What kind of Python value a literal node is, for "expected a list, got a str".
const char* literal_kind(const frontend::ast::expr* e);

}  // namespace npufuse::rules
