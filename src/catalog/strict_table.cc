#include "catalog/strict_table.h"

#include <fmt/format.h>

namespace npufuse::catalog {

static std::string join_errors(const std::vector<std::string>& errors) {
  std::string out;
  for (const auto& e : errors) out += (out.empty() ? "" : "\n") + e;
  return out;
}

CatalogError::CatalogError(std::vector<std::string> errors)
    : std::runtime_error(join_errors(errors)), errors_(std::move(errors)) {}

StrictTable::StrictTable(const toml::table& table, const std::string& file, Diagnostics& diags, std::string what)
    : table_(table), file_(file), diags_(diags), what_(std::move(what)) {}

std::string StrictTable::where(const toml::node* node) const {
  const toml::source_region& r = node ? node->source() : table_.source();
  if (r.begin.line == 0) return fmt::format("{}:1:1", file_);
  return fmt::format("{}:{}:{}", file_, r.begin.line, r.begin.column);
}

std::string StrictTable::where_key(std::string_view key) const {
  for (auto&& [k, v] : table_) {
    if (k.str() == key && k.source().begin.line != 0)
      return fmt::format("{}:{}:{}", file_, k.source().begin.line, k.source().begin.column);
  }
  return where(nullptr);
}

void StrictTable::error(const toml::node* node, const std::string& message) {
  diags_.errors.push_back(fmt::format("{}: {}", where(node), message));
}

void StrictTable::warning(const toml::node* node, const std::string& message) {
  diags_.warnings.push_back(fmt::format("{}: {}", where(node), message));
}

void StrictTable::type_error(const toml::node& node, std::string_view key, const char* expected) {
  error(&node, fmt::format("'{}' in {} must be {}", key, what_, expected));
}

const toml::node* StrictTable::take(std::string_view key, bool required, const char* expected) {
  used_.insert(std::string(key));
  const toml::node* n = table_.get(key);
  if (!n && required) error(nullptr, fmt::format("{} lacks the required key '{}' ({})", what_, key, expected));
  return n;
}

std::optional<std::string> StrictTable::string(std::string_view key, bool required) {
  const toml::node* n = take(key, required, "a string");
  if (!n) return std::nullopt;
  if (const auto* s = n->as_string()) return s->get();
  type_error(*n, key, "a string");
  return std::nullopt;
}

std::optional<int64_t> StrictTable::integer(std::string_view key, bool required) {
  const toml::node* n = take(key, required, "an integer");
  if (!n) return std::nullopt;
  if (const auto* i = n->as_integer()) return i->get();
  type_error(*n, key, "an integer");
  return std::nullopt;
}

std::optional<bool> StrictTable::boolean(std::string_view key) {
  const toml::node* n = take(key, false, "true or false");
  if (!n) return std::nullopt;
  if (const auto* b = n->as_boolean()) return b->get();
  type_error(*n, key, "true or false");
  return std::nullopt;
}

std::vector<std::string> StrictTable::string_list(std::string_view key, bool required) {
  std::vector<std::string> out;
  const toml::node* n = take(key, required, "a list of strings");
  if (!n) return out;
  const toml::array* arr = n->as_array();
  if (!arr) {
    type_error(*n, key, "a list of strings");
    return out;
  }
  for (const toml::node& item : *arr) {
    if (const auto* s = item.as_string()) out.push_back(s->get());
    else type_error(item, key, "a list of strings");
  }
  return out;
}

check::LocalizedText StrictTable::localized(std::string_view key, bool require_en, bool require_zh) {
  check::LocalizedText text;
  const toml::node* n = take(key, require_en || require_zh, "en/zh texts");
  if (!n) return text;
  const toml::table* t = n->as_table();
  if (!t) {
    type_error(*n, key, fmt::format("a table of texts: {0}.en = \"...\", {0}.zh = \"...\"", key).c_str());
    return text;
  }
  StrictTable sub(*t, file_, diags_, fmt::format("'{}' of {}", key, what_));
  text.en = sub.string("en", require_en).value_or("");
  text.zh = sub.string("zh", require_zh).value_or("");
  sub.reject_unknown_keys();
  return text;
}

std::vector<const toml::table*> StrictTable::tables(std::string_view key) {
  std::vector<const toml::table*> out;
  const toml::node* n = take(key, false, "an array of tables");
  if (!n) return out;
  const toml::array* arr = n->as_array();
  if (!arr) {
    type_error(*n, key, fmt::format("an array of tables ([[{}]])", key).c_str());
    return out;
  }
  for (const toml::node& item : *arr) {
    if (const auto* t = item.as_table()) out.push_back(t);
    else type_error(item, key, fmt::format("an array of tables ([[{}]])", key).c_str());
  }
  return out;
}

const toml::table* StrictTable::table(std::string_view key) {
  const toml::node* n = take(key, false, "a table");
  if (!n) return nullptr;
  if (const auto* t = n->as_table()) return t;
  type_error(*n, key, "a table");
  return nullptr;
}

void StrictTable::reject_unknown_keys() {
  for (auto&& [k, v] : table_) {
    if (used_.count(k.str())) continue;
    std::string at = k.source().begin.line != 0
                         ? fmt::format("{}:{}:{}", file_, k.source().begin.line, k.source().begin.column)
                         : where(&v);
    diags_.errors.push_back(fmt::format("{}: unknown key '{}' in {}", at, k.str(), what_));
  }
}

}  // namespace npufuse::catalog
