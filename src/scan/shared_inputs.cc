#include "scan/shared_inputs.h"

#include <future>

#include "plan/reference_chains.h"
#include "util/sha256.h"

namespace npufuse::scan {

namespace {

// Length-prefixed so that moving bytes from one file's text to the next
// file's path cannot give the same digest input.
void append_key_field(std::string& out, const std::string& s) {
  out += std::to_string(s.size());
  out += ':';
  out += s;
}

}  // namespace

SharedInputs SharedInputs::load(const std::string& rules_dir, const std::string& catalog_dir, bool with_fingerprint) {
  std::vector<rules::RuleFile> rule_files =
      rules_dir.empty() ? rules::embedded_rule_files() : rules::directory_rule_files(rules_dir);
  std::vector<catalog::CatalogFile> catalog_files =
      catalog_dir.empty() ? catalog::embedded_catalog_files() : catalog::directory_catalog_files(catalog_dir);
  // The two loads share nothing: the catalog's parse runs beside the rules'.
  std::future<catalog::Catalog> catalog = std::async(std::launch::async, [&] {
    return catalog::Catalog::load(catalog_files, catalog_dir.empty() ? "catalog" : catalog_dir);
  });

  std::string fingerprint;
  if (with_fingerprint) {
    std::string digest_input;
    for (const auto& f : rule_files) {
      append_key_field(digest_input, "rules/" + f.path);
      append_key_field(digest_input, f.text);
    }
    for (const auto& f : catalog_files) {
      append_key_field(digest_input, "catalog/" + f.path);
      append_key_field(digest_input, f.text);
    }
    // The reference chains shape every plan's step 2 too.
    for (const auto& [path, text] : plan::embedded_reference_chain_files()) {
      append_key_field(digest_input, "chains/" + path);
      append_key_field(digest_input, text);
    }
    fingerprint = util::sha256_hex(digest_input);
  }

  // A rules error waits for the catalog's thread (the future's destructor)
  // and is the one told, as when the two were read one after the other.
  rules::RuleSet rules = rules::RuleSet::load(rule_files, rules_dir.empty() ? "rules" : rules_dir);
  SharedInputs shared{std::move(rules), catalog::Catalog{}, std::move(fingerprint), nullptr, nullptr};
  // Patterns point at their rules: compiled where the rules now live (a
  // move of the RuleSet keeps its rules where they are).
  shared.patterns = plan::compile_patterns(shared.rules);
  shared.memo = std::make_shared<match::MatchMemo>(*shared.patterns);
  shared.catalog = catalog.get();
  return shared;
}

}  // namespace npufuse::scan
