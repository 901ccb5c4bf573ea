#include "catalog/catalog.h"

#include <fmt/format.h>

#include <algorithm>

#include "catalog/catalog_validation.h"
#include "catalog/operator_reader.h"

namespace npufuse::catalog {

Catalog Catalog::load(const std::vector<CatalogFile>& files, const std::string& display_root) {
  Catalog catalog;
  Diagnostics diags;
  auto shown = [&](const std::string& path) { return display_root.empty() ? path : display_root + "/" + path; };

  auto facts = std::find_if(files.begin(), files.end(), [](const CatalogFile& f) { return f.path == "facts.toml"; });
  if (facts == files.end()) throw CatalogError({fmt::format("{}: no facts.toml in the catalog", shown("facts.toml"))});
  catalog.facts_ = FactVocabulary::parse(facts->text, shown(facts->path), diags);

  std::vector<std::string> relative_paths;
  for (const CatalogFile& f : files) {
    if (f.path == "facts.toml") continue;
    if (f.path == "aliases.toml") {
      auto read = read_aliases(f.text, shown(f.path), diags);
      catalog.aliases_.insert(catalog.aliases_.end(), read.begin(), read.end());
      continue;
    }
    if (auto op = read_operator(f.text, shown(f.path), diags)) {
      catalog.operators_.push_back(std::move(*op));
      relative_paths.push_back(f.path);
    }
  }
  validate_catalog(catalog.operators_, relative_paths, catalog.facts_, diags);
  validate_aliases(catalog.aliases_, catalog.operators_, diags);
  if (!diags.errors.empty()) throw CatalogError(diags.errors);
  std::sort(catalog.operators_.begin(), catalog.operators_.end(),
            [](const Operator& a, const Operator& b) { return a.name < b.name; });
  std::sort(catalog.aliases_.begin(), catalog.aliases_.end(),
            [](const Alias& a, const Alias& b) { return a.name < b.name; });
  catalog.warnings_ = std::move(diags.warnings);
  return catalog;
}

const Operator* Catalog::find(std::string_view name) const {
  auto it = std::lower_bound(operators_.begin(), operators_.end(), name,
                             [](const Operator& op, std::string_view n) { return op.name < n; });
  return it != operators_.end() && it->name == name ? &*it : nullptr;
}

}  // namespace npufuse::catalog

namespace npufuse::catalog {

const Alias* Catalog::find_alias(std::string_view name) const {
  auto it = std::find_if(aliases_.begin(), aliases_.end(), [&](const Alias& a) { return a.name == name; });
  return it != aliases_.end() ? &*it : nullptr;
}

}  // namespace npufuse::catalog
