#pragma once
// The operator catalog: every catalog/<family>/<name>.toml plus the fact
// vocabulary (facts.toml), loaded and cross-checked. It comes either from
// the copy embedded in the binary or from a directory (--catalog DIR).
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/aliases.h"
#include "catalog/diagnostics.h"
#include "catalog/fact_vocabulary.h"
#include "catalog/model.h"

namespace npufuse::catalog {

// One catalog file: its path relative to the catalog root ('/'-separated)
// and its text.
struct CatalogFile {
  std::string path;
  std::string text;
};

class Catalog {
 public:
  // `files` must contain facts.toml at the root; aliases.toml there is optional. `display_root` prefixes
  // paths in messages ("catalog" for the embedded copy, the directory
  // otherwise). Throws CatalogError listing every error.
  static Catalog load(const std::vector<CatalogFile>& files, const std::string& display_root);
  // For the embedded copy, which the catalog tests load and cross-check
  // whole: facts.toml and aliases.toml are read now, each operator file only
  // when find() first asks for it. Parsing all 75 TOML files is most of what
  // an `analyze` would otherwise spend, and a plan needs a handful of them.
  // A file that fails to parse throws CatalogError from find().
  static Catalog load_on_demand(std::vector<CatalogFile> files, const std::string& display_root);

  const std::vector<Operator>& operators() const;  // sorted by name (reads every pending file)
  const Operator* find(std::string_view name) const;
  const std::vector<Alias>& aliases() const { return aliases_; }  // sorted by name
  const Alias* find_alias(std::string_view name) const;
  const FactVocabulary& facts() const { return facts_; }
  const std::vector<std::string>& warnings() const { return warnings_; }
  // Wall time spent so far reading operator files on demand (load_on_demand):
  // loading the catalog, though it happens while a plan is checked.
  double on_demand_read_ms() const { return on_demand_read_ms_; }

 private:
  const Operator* read_pending(std::string_view name) const;

  mutable std::vector<Operator> operators_;
  // load_on_demand: operator files not read yet, by operator name (the file
  // stem), and those read so far (a deque, so that pointers stay valid).
  mutable std::map<std::string, CatalogFile, std::less<>> pending_;
  mutable std::deque<Operator> read_on_demand_;
  mutable std::map<std::string, const Operator*, std::less<>> read_index_;
  mutable double on_demand_read_ms_ = 0;
  bool on_demand_ = false;
  std::string display_root_;
  std::vector<Alias> aliases_;
  FactVocabulary facts_;
  std::vector<std::string> warnings_;
};

// The files embedded at build time (needs the npufuse_catalog_data library).
std::vector<CatalogFile> embedded_catalog_files();
// Every *.toml under `dir`, recursively. Throws FileError when `dir` is not a directory.
std::vector<CatalogFile> directory_catalog_files(const std::string& dir);

}  // namespace npufuse::catalog
