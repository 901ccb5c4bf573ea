#include "catalog/aliases.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <map>

#include "catalog/strict_table.h"

namespace npufuse::catalog {

std::string toml_parse_error_text(const toml::parse_error& e, const std::string& file);  // fact_vocabulary.cc

const std::vector<std::string>& known_alias_kinds() {
  static const std::vector<std::string> kinds = {"custom_op", "renamed"};
  return kinds;
}

std::vector<Alias> read_aliases(std::string_view text, const std::string& file, Diagnostics& diags) {
  std::vector<Alias> out;
  toml::table root;
  try {
    root = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    diags.errors.push_back(toml_parse_error_text(e, file));
    return out;
  }
  StrictTable top(root, file, diags, "aliases file");
  std::vector<const toml::table*> tables = top.tables("alias");
  top.reject_unknown_keys();
  for (size_t i = 0; i < tables.size(); ++i) {
    StrictTable t(*tables[i], file, diags, fmt::format("[[alias]] #{}", i + 1));
    Alias a;
    a.where = t.where(nullptr);
    a.name = t.string("name", true).value_or("");
    a.kind = t.string("kind", true).value_or("");
    a.use = t.string("use", true).value_or("");
    a.use_where = t.where(tables[i]->get("use"));
    a.note = t.localized("note", true, true);
    if (!a.kind.empty() && std::find(known_alias_kinds().begin(), known_alias_kinds().end(), a.kind) ==
                               known_alias_kinds().end())
      t.error(tables[i]->get("kind"), fmt::format("unknown alias kind \"{}\" (one of: custom_op, renamed)", a.kind));
    t.reject_unknown_keys();
    out.push_back(std::move(a));
  }
  return out;
}

void validate_aliases(const std::vector<Alias>& aliases, const std::vector<Operator>& operators, Diagnostics& diags) {
  auto is_operator = [&](const std::string& name) {
    return std::any_of(operators.begin(), operators.end(), [&](const Operator& op) { return op.name == name; });
  };
  std::map<std::string, std::string> first;
  for (const Alias& a : aliases) {
    if (a.name.empty()) continue;  // already reported as missing
    if (auto [it, fresh] = first.emplace(a.name, a.where); !fresh)
      diags.errors.push_back(fmt::format("{}: alias '{}' is already defined at {}", a.where, a.name, it->second));
    if (is_operator(a.name))
      diags.errors.push_back(
          fmt::format("{}: alias '{}' is also a catalog operator; an alias names something that is not", a.where, a.name));
    if (!a.use.empty() && !is_operator(a.use))
      diags.errors.push_back(
          fmt::format("{}: alias '{}' uses '{}', which is not an operator in the catalog", a.use_where, a.name, a.use));
  }
}

}  // namespace npufuse::catalog
