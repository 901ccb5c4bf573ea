#include "catalog/catalog.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

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

Catalog Catalog::load_on_demand(std::vector<CatalogFile> files, const std::string& display_root) {
  Catalog catalog;
  catalog.on_demand_ = true;
  catalog.display_root_ = display_root;
  Diagnostics diags;
  auto shown = [&](const std::string& path) { return display_root.empty() ? path : display_root + "/" + path; };
  bool has_facts = false;
  for (CatalogFile& f : files) {
    if (f.path == "facts.toml") {
      catalog.facts_ = FactVocabulary::parse(f.text, shown(f.path), diags);
      has_facts = true;
    } else if (f.path == "aliases.toml") {
      auto read = read_aliases(f.text, shown(f.path), diags);
      catalog.aliases_.insert(catalog.aliases_.end(), read.begin(), read.end());
    } else {
      std::string stem = f.path.substr(f.path.rfind('/') + 1);
      stem = stem.substr(0, stem.rfind('.'));
      catalog.pending_.emplace(std::move(stem), std::move(f));
    }
  }
  if (!has_facts) throw CatalogError({fmt::format("{}: no facts.toml in the catalog", shown("facts.toml"))});
  if (!diags.errors.empty()) throw CatalogError(diags.errors);
  std::sort(catalog.aliases_.begin(), catalog.aliases_.end(),
            [](const Alias& a, const Alias& b) { return a.name < b.name; });
  catalog.warnings_ = std::move(diags.warnings);
  return catalog;
}

const Operator* Catalog::read_pending(std::string_view name) const {
  auto it = pending_.find(name);
  if (it == pending_.end()) return nullptr;
  auto start = std::chrono::steady_clock::now();
  Diagnostics diags;
  const std::string& path = it->second.path;
  std::optional<Operator> op =
      read_operator(it->second.text, display_root_.empty() ? path : display_root_ + "/" + path, diags);
  if (!diags.errors.empty()) throw CatalogError(diags.errors);
  pending_.erase(it);
  on_demand_read_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!op) return nullptr;
  read_on_demand_.push_back(std::move(*op));
  const Operator* read = &read_on_demand_.back();
  read_index_.emplace(read->name, read);
  return read->name == name ? read : nullptr;
}

const std::vector<Operator>& Catalog::operators() const {
  if (!on_demand_ || (pending_.empty() && operators_.size() == read_on_demand_.size())) return operators_;
  while (!pending_.empty()) read_pending(std::string(pending_.begin()->first));
  operators_.assign(read_on_demand_.begin(), read_on_demand_.end());
  std::sort(operators_.begin(), operators_.end(), [](const Operator& a, const Operator& b) { return a.name < b.name; });
  return operators_;
}

const Operator* Catalog::find(std::string_view name) const {
  if (on_demand_) {
    if (auto it = read_index_.find(name); it != read_index_.end()) return it->second;
    return read_pending(name);
  }
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
