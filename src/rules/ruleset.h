#pragma once
// Every rule npufuse knows, loaded from the copy of rules/ embedded in the
// binary or from a directory (--rules DIR). Loading is strict: a RULE key
// that is unknown or of the wrong type, a missing `search` or `replace`, or a
// replace/search parameter list mismatch is an error naming file:line:col.
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/source_set.h"
#include "rules/rule.h"

namespace npufuse::rules {

struct RuleFile {
  std::string path;  // relative to the rules root, '/'-separated ("norm/rms_norm.py")
  std::string text;
};

// Every error found while loading, one "file:line:col: message" per line.
class RuleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RuleSet {
 public:
  // Loads every `<family>/<name>.py` (fixtures/ folders and README are not rules).
  static RuleSet load(const std::vector<RuleFile>& files, const std::string& display_root);

  const std::vector<Rule>& rules() const { return rules_; }  // sorted by id
  const Rule* find(std::string_view id) const;

 private:
  std::vector<std::shared_ptr<model::SourceSet>> sources_;  // one per rule file
  std::vector<Rule> rules_;
};

// rules/ as embedded at build time (needs the npufuse_rules_data library).
std::vector<RuleFile> embedded_rule_files();
// Every rule file under `dir`. Throws FileError when `dir` is not a directory.
std::vector<RuleFile> directory_rule_files(const std::string& dir);

}  // namespace npufuse::rules
