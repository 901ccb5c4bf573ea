#include "catalog/fact_vocabulary.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>

#include "catalog/strict_table.h"

namespace npufuse::catalog {

std::string toml_parse_error_text(const toml::parse_error& e, const std::string& file) {
  return fmt::format("{}:{}:{}: TOML syntax error: {}", file, e.source().begin.line, e.source().begin.column,
                     e.description());
}

namespace {

// `values = [...]`: strings, integers or booleans.
std::vector<check::Value> read_values(StrictTable& reader, const toml::table& t, const std::string& name,
                                      Diagnostics& diags, const std::string& file) {
  std::vector<check::Value> out;
  const toml::node* n = t.get("values");
  if (!n) return out;
  const toml::array* arr = n->as_array();
  if (!arr) {
    reader.error(n, fmt::format("'values' in [facts.{}] must be a list", name));
    return out;
  }
  for (const toml::node& item : *arr) {
    if (const auto* s = item.as_string()) out.emplace_back(s->get());
    else if (const auto* i = item.as_integer()) out.emplace_back(i->get());
    else if (const auto* b = item.as_boolean()) out.emplace_back(b->get());
    else reader.error(&item, fmt::format("'values' in [facts.{}] may hold strings, integers or booleans", name));
  }
  return out;
}

// `same_kernels = { PRODUCT = [PRODUCT, ...] }`, every name one of `values`.
void read_same_kernels(StrictTable& reader, const toml::table& t, FactInfo& info) {
  const toml::node* n = t.get("same_kernels");
  if (!n) return;
  reader.mark_used("same_kernels");
  if (info.name != "chip") reader.error(n, fmt::format("'same_kernels' belongs to [facts.chip], not [facts.{}]", info.name));
  const toml::table* table = n->as_table();
  if (!table) {
    reader.error(n, fmt::format("'same_kernels' in [facts.{}] must be a table of lists", info.name));
    return;
  }
  auto known = [&](std::string_view product) {
    return std::any_of(info.values.begin(), info.values.end(),
                       [&](const check::Value& v) { return v.is_str() && v.as_str() == product; });
  };
  for (auto&& [key, value] : *table) {
    std::string product(key.str());
    if (!known(product)) reader.error(&value, fmt::format("'same_kernels' names \"{}\", which is none of [facts.{}] values", product, info.name));
    const toml::array* list = value.as_array();
    if (!list) {
      reader.error(&value, fmt::format("'same_kernels.{}' in [facts.{}] must be a list of products", product, info.name));
      continue;
    }
    std::vector<std::string>& out = info.same_kernels[product];
    for (const toml::node& item : *list) {
      const auto* s = item.as_string();
      if (!s || !known(s->get()) || s->get() == product)
        reader.error(&item, fmt::format("'same_kernels.{}' in [facts.{}] must list other products among its values", product, info.name));
      else
        out.push_back(s->get());
    }
  }
}

}  // namespace

FactVocabulary FactVocabulary::parse(std::string_view text, const std::string& file, Diagnostics& diags) {
  FactVocabulary vocab;
  toml::table root;
  try {
    root = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    diags.errors.push_back(toml_parse_error_text(e, file));
    return vocab;
  }
  StrictTable top(root, file, diags, "facts file");
  const toml::table* facts = top.table("facts");
  top.reject_unknown_keys();
  if (!facts) {
    top.error(nullptr, "no [facts.NAME] tables");
    return vocab;
  }
  static const std::vector<std::string> kTypes = {"int", "float", "str", "bool", "list"};
  for (auto&& [key, node] : *facts) {
    std::string name(key.str());
    const toml::table* t = node.as_table();
    if (!t) {
      diags.errors.push_back(fmt::format("{}:{}:{}: facts.{} must be a table", file, key.source().begin.line,
                                         key.source().begin.column, name));
      continue;
    }
    StrictTable reader(*t, file, diags, fmt::format("[facts.{}]", name));
    FactInfo info;
    info.name = name;
    info.type = reader.string("type", true).value_or("");
    if (!info.type.empty() && std::find(kTypes.begin(), kTypes.end(), info.type) == kTypes.end())
      reader.error(t->get("type"), fmt::format("unknown fact type '{}' (int, float, str, bool, list)", info.type));
    info.values = read_values(reader, *t, name, diags, file);
    reader.mark_used("values");
    info.source = reader.string("source", true).value_or("");
    info.meaning = reader.string("meaning", true).value_or("");
    read_same_kernels(reader, *t, info);
    reader.reject_unknown_keys();
    vocab.facts_.emplace(name, std::move(info));
  }
  return vocab;
}

const FactInfo* FactVocabulary::find(std::string_view name) const {
  auto it = facts_.find(name);
  return it == facts_.end() ? nullptr : &it->second;
}

}  // namespace npufuse::catalog
