#pragma once
// Where an installed docstring's prototype and the catalog's signature
// disagree (a parameter one of them lacks, another default, the `*`
// marker). Prototypes in docstrings can be older than the catalog; the user
// should know which one their torch_npu follows.
#include <string>
#include <vector>

#include "catalog/docstrings.h"
#include "catalog/model.h"

namespace npufuse::catalog {

std::vector<std::string> docstring_disagreements(const Operator& op, const DocstringEntry& docstring, Lang lang);

}  // namespace npufuse::catalog
