#pragma once
// Compares every catalog signature with op_plugin_functions.yaml. A
// difference is fine only when the entry records it in [[schema_drift]].
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "catalog/schema_index.h"

namespace npufuse::catalog {

struct ConformanceReport {
  // "op: param kind: doc X vs schema Y", one per unrecorded difference.
  std::vector<std::string> unexplained;
  // Recorded drift that matches no difference any more (informational).
  std::vector<std::string> stale;
};

ConformanceReport check_schema_conformance(const std::vector<Operator>& operators, const SchemaIndex& schema);

}  // namespace npufuse::catalog
