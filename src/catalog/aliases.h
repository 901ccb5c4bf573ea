#pragma once
// catalog/aliases.toml: names users meet in model ports that are not
// torch_npu operators (custom ops of a port, renamed operators), each
// pointing at the catalog operator to use instead. Optional file.
#include <string>
#include <vector>

#include "catalog/diagnostics.h"
#include "catalog/model.h"

namespace npufuse::catalog {

struct Alias {
  std::string name;
  std::string kind;  // "custom_op" | "renamed"
  std::string use;   // a catalog operator
  LocalizedText note;
  std::string where;      // "file:line:col" of the [[alias]] table
  std::string use_where;  // "file:line:col" of its `use` value
};

const std::vector<std::string>& known_alias_kinds();

// Reads every [[alias]] table strictly; problems go to `diags`.
std::vector<Alias> read_aliases(std::string_view text, const std::string& file, Diagnostics& diags);

// `use` must name an operator, and an alias must not shadow one.
void validate_aliases(const std::vector<Alias>& aliases, const std::vector<Operator>& operators, Diagnostics& diags);

}  // namespace npufuse::catalog
