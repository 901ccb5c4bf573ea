#pragma once
// What `npufuse ops` knows: the catalog entries and the installed
// docstrings, merged by operator name, with ranked search and near-name
// suggestions.
#include <string>
#include <string_view>
#include <vector>

#include "util/edit_distance.h"
#include "catalog/catalog.h"
#include "catalog/docstrings.h"

namespace npufuse::catalog {

struct OpsEntry {
  std::string name;
  const Operator* op = nullptr;            // null: known from the docstrings only
  const DocstringEntry* docstring = nullptr;  // null: no installed docstring
  const Alias* alias = nullptr;               // set when the name is listed in aliases.toml

  // A name that is only an alias: not a torch_npu operator as far as we know.
  bool alias_only() const { return alias && !op && !docstring; }
};

// Where the two sources came from, shown with every entry.
struct OpsProvenance {
  std::string catalog;     // "built-in catalog (npufuse 0.1.0)" or "catalog directory DIR"
  std::string docstrings;  // "" when no docstring file was read
};

// Search tiers, best first.
// Summary text outranks the curated keyword lists: many entries list a broad
// keyword ("RoPE") that only the operators whose summary says it are about.
enum class MatchTier { ExactName, NamePrefix, NameSubstring, Summary, Keyword, Body };
const char* match_tier_name(MatchTier t);

struct SearchHit {
  const OpsEntry* entry;
  MatchTier tier;
};

class OpsIndex {
 public:
  OpsIndex(const Catalog* catalog, const DocstringFile* docs);

  const std::vector<OpsEntry>& entries() const { return entries_; }  // sorted by name
  const OpsEntry* find(std::string_view name) const;
  // Case-insensitive (ASCII) match of `keyword` on names, summaries,
  // keywords, then on all other text (both languages); best tier first, then
  // by name.
  std::vector<SearchHit> search(std::string_view keyword) const;
  // Names within a small edit distance of `name`, or containing it; closest first.
  std::vector<std::string> similar_names(std::string_view name, size_t max) const;

 private:
  std::vector<OpsEntry> entries_;
};

using npufuse::edit_distance;  // byte-wise Levenshtein distance (util/edit_distance.h)

}  // namespace npufuse::catalog
