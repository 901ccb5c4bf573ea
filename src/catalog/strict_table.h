#pragma once
// Reads one TOML table strictly: every key must be one the reader asks for,
// and every value must have the expected type. Problems go to Diagnostics as
// `file:line:col: message`, using the source regions toml++ keeps.
#include <toml++/toml.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "catalog/diagnostics.h"
#include "check/text.h"

namespace npufuse::catalog {

class StrictTable {
 public:
  // `what` names the table in messages: "operator", "[[params]] #2", ...
  StrictTable(const toml::table& table, const std::string& file, Diagnostics& diags, std::string what);

  std::optional<std::string> string(std::string_view key, bool required = false);
  std::optional<int64_t> integer(std::string_view key, bool required = false);
  std::optional<bool> boolean(std::string_view key);
  std::vector<std::string> string_list(std::string_view key, bool required = false);
  // A `key.en` / `key.zh` pair. `require_en`/`require_zh` make each mandatory.
  check::LocalizedText localized(std::string_view key, bool require_en = false, bool require_zh = false);
  // An array of tables ([[key]]); empty when absent.
  std::vector<const toml::table*> tables(std::string_view key);
  // A sub-table (`key.x = ...`); null when absent.
  const toml::table* table(std::string_view key);

  // Accepts `key` without reading it through this reader.
  void mark_used(std::string_view key) { used_.insert(std::string(key)); }

  // Reports every key nobody asked for. Call after reading everything.
  void reject_unknown_keys();

  // "file:line:col" of a node, or of this table when the node is null.
  std::string where(const toml::node* node) const;
  std::string where_key(std::string_view key) const;
  void error(const toml::node* node, const std::string& message);
  void warning(const toml::node* node, const std::string& message);

  const std::string& file() const { return file_; }
  Diagnostics& diags() { return diags_; }

 private:
  const toml::node* take(std::string_view key, bool required, const char* expected);
  void type_error(const toml::node& node, std::string_view key, const char* expected);

  const toml::table& table_;
  std::string file_;
  Diagnostics& diags_;
  std::string what_;
  std::set<std::string, std::less<>> used_;
};

}  // namespace npufuse::catalog
