#pragma once
// Problems found while loading the catalog. Every message starts with
// `file:line:col:`. Errors stop the load (CatalogError lists them all);
// warnings are kept on the Catalog for whoever wants to show them.
#include <stdexcept>
#include <string>
#include <vector>

namespace npufuse::catalog {

struct Diagnostics {
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
};

class CatalogError : public std::runtime_error {
 public:
  explicit CatalogError(std::vector<std::string> errors);
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  std::vector<std::string> errors_;
};

}  // namespace npufuse::catalog
