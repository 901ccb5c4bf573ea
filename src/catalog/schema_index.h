#pragma once
// The `- func:` lines of op_plugin_functions.yaml, parsed with
// parse_signature and indexed by operator name.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/signature.h"

namespace npufuse::catalog {

struct SchemaEntry {
  int line = 0;  // 1-based line of the `- func:` in the yaml
  Signature signature;
};

class SchemaIndex {
 public:
  // Lines that look like `- func:` but do not parse go to `errors` as "line N: reason".
  static SchemaIndex parse(std::string_view yaml_text, std::vector<std::string>* errors);

  // The base (non-overload) function `name`; when several sections declare
  // it, the one at `preferred_line` if given, else the first.
  const SchemaEntry* find(const std::string& name, int preferred_line = 0) const;
  size_t size() const { return count_; }

 private:
  std::map<std::string, std::vector<SchemaEntry>, std::less<>> by_name_;
  size_t count_ = 0;
};

}  // namespace npufuse::catalog
