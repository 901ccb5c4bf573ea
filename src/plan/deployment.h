#pragma once
// The deployment file (`--deploy FILE`, TOML): the same settings as the
// flags, plus any other fact of catalog/facts.toml the command line has no
// flag for (batch_size, q_seq_len, kv_seq_len, block_size, ...). docs/cli.md
// documents the keys. Flags given on the command line win over the file.
#include <string>
#include <vector>

#include "catalog/fact_vocabulary.h"
#include "check/value.h"

namespace npufuse::plan {

struct DeploymentSetting {
  std::string name;   // a facts.toml name
  check::Value value;
  std::string where;  // "deploy.toml:3:1"
};

// Reads `path`; throws std::invalid_argument naming file:line:col for a TOML
// syntax error, a key that is not a known fact, or a value of the wrong type
// or outside the fact's allowed values. Throws FileError when unreadable.
std::vector<DeploymentSetting> load_deployment(const std::string& path, const catalog::FactVocabulary& vocabulary);

// The same for text already read (tests); `display_path` names it in messages.
std::vector<DeploymentSetting> parse_deployment(const std::string& text, const std::string& display_path,
                                                const catalog::FactVocabulary& vocabulary);

}  // namespace npufuse::plan
