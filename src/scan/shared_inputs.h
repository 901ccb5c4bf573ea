#pragma once
// What every model of a scan reads the same way: the rules and the operator
// catalog, loaded once and then only read, from all worker threads at once.
// The catalog is read whole here rather than on demand: the on-demand form
// fills itself in on first use and so is not safe to share between threads.
#include <string>

#include "catalog/catalog.h"
#include "plan/model_matches.h"
#include "rules/ruleset.h"

namespace npufuse::scan {

struct SharedInputs {
  rules::RuleSet rules;
  catalog::Catalog catalog;
  // sha256 over every rule, catalog and reference-chain file (path and
  // bytes): a cached plan made with other rules, another catalog or other
  // chains is never reused. Empty when loaded without one (a scan that
  // keeps no cache has no use for it).
  std::string fingerprint;
  // The rules compiled into patterns once for the whole scan.
  plan::CompiledPatterns patterns;
  // Walks that gave a match or a near-miss, by graph, shared by all models:
  // copied code is matched in full once (match/match_memo.h).
  std::shared_ptr<match::MatchMemo> memo;

  // Embedded copies unless a directory is given. The catalog is read on a
  // second thread while the rules are read and compiled. Throws
  // rules::RuleError, catalog::CatalogError or FileError.
  static SharedInputs load(const std::string& rules_dir, const std::string& catalog_dir, bool with_fingerprint = true);
};

}  // namespace npufuse::scan
