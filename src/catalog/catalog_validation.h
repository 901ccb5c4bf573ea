#pragma once
// Checks across catalog entries, after each file has been read:
// names unique and equal to the file name, family equal to the folder,
// products/status known, constraint facts declared in facts.toml, and
// `related` names present (a warning: the catalog may grow later).
#include <string>
#include <vector>

#include "catalog/diagnostics.h"
#include "catalog/fact_vocabulary.h"
#include "catalog/model.h"

namespace npufuse::catalog {

// `relative_paths[i]` is operators[i]'s path under the catalog root.
void validate_catalog(const std::vector<Operator>& operators, const std::vector<std::string>& relative_paths,
                      const FactVocabulary& facts, Diagnostics& diags);

}  // namespace npufuse::catalog
