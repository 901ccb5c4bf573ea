#pragma once
// Reads one catalog/<family>/<name>.toml into an Operator, strictly (unknown
// keys and wrong types are errors) and parsing every constraint expression.
// Cross-file checks (unique names, known facts, related names) live in
// catalog_validation.h.
#include <optional>
#include <string>
#include <string_view>

#include "catalog/diagnostics.h"
#include "catalog/model.h"

namespace npufuse::catalog {

std::optional<Operator> read_operator(std::string_view text, const std::string& file, Diagnostics& diags);

}  // namespace npufuse::catalog
