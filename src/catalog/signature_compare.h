#pragma once
// Differences between two parameter lists: the catalog's (from the doc) and
// the schema's or an installed docstring's. Used by the schema conformance
// test and by `ops show` warnings.
#include <string>
#include <vector>

#include "catalog/model.h"
#include "catalog/signature.h"

namespace npufuse::catalog {

struct SignatureDiff {
  std::string param;        // the catalog-side name (schema-side when only the schema has it)
  DriftKind kind;
  std::string catalog_side;  // what the catalog says ("1e-06", "kw-only", "absent", ...)
  std::string other_side;    // what the schema / docstring says
};

std::vector<SigParam> to_sig_params(const std::vector<Param>& params);

// Compares names, order, defaults (normalised) and the keyword-only marker.
// A parameter renamed at the same position is one NameDiffers, not a
// missing + extra pair.
std::vector<SignatureDiff> compare_signatures(const std::vector<SigParam>& catalog_side,
                                              const std::vector<SigParam>& other_side);

}  // namespace npufuse::catalog
