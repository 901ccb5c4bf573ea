#pragma once
// The named facts constraints may use (catalog/facts.toml).
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/diagnostics.h"
#include "check/value.h"

namespace npufuse::catalog {

struct FactInfo {
  std::string name;
  std::string type;                 // int | float | str | bool | list
  std::vector<check::Value> values;  // allowed values (may be empty: any value of the type)
  std::string source;
  std::string meaning;
  // Only for `chip`: per product, the products whose kernels it runs
  // (`same_kernels = { A3 = ["A2"] }`). An operator documented for one of
  // those but not for the product itself is undocumented there, not unsupported.
  std::map<std::string, std::vector<std::string>, std::less<>> same_kernels;
};

class FactVocabulary {
 public:
  // Parses facts.toml; problems go to `diags` with file:line:col.
  static FactVocabulary parse(std::string_view text, const std::string& file, Diagnostics& diags);

  const FactInfo* find(std::string_view name) const;
  const std::map<std::string, FactInfo, std::less<>>& all() const { return facts_; }

 private:
  std::map<std::string, FactInfo, std::less<>> facts_;
};

}  // namespace npufuse::catalog
