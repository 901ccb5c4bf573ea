#include "catalog/schema_conformance.h"

#include <fmt/format.h>

#include <algorithm>

#include "catalog/signature_compare.h"

namespace npufuse::catalog {
namespace {

bool drift_covers(const SchemaDrift& d, const SignatureDiff& diff) {
  if (d.kind != diff.kind) return false;
  if (d.kind == DriftKind::NameDiffers) return d.param == diff.param || d.param == diff.other_side;
  return d.param == diff.param;
}

}  // namespace

ConformanceReport check_schema_conformance(const std::vector<Operator>& operators, const SchemaIndex& schema) {
  ConformanceReport report;
  for (const Operator& op : operators) {
    const SchemaEntry* entry = schema.find(op.schema_lookup_name(), static_cast<int>(op.schema_line.value_or(0)));
    bool says_absent = std::any_of(op.schema_drift.begin(), op.schema_drift.end(),
                                   [](const SchemaDrift& d) { return d.kind == DriftKind::NoSchemaEntry; });
    if (!entry) {
      if (!says_absent)
        report.unexplained.push_back(fmt::format("{}: - no_schema_entry: doc has the operator vs schema has no "
                                                 "function '{}'",
                                                 op.name, op.schema_lookup_name()));
      continue;
    }
    if (says_absent)
      report.stale.push_back(fmt::format("{}: records no_schema_entry, but the schema has '{}' at line {}", op.name,
                                         op.schema_lookup_name(), entry->line));
    auto diffs = compare_signatures(to_sig_params(op.params), entry->signature.params);
    for (const auto& diff : diffs) {
      bool recorded = std::any_of(op.schema_drift.begin(), op.schema_drift.end(),
                                  [&](const SchemaDrift& d) { return drift_covers(d, diff); });
      if (!recorded)
        report.unexplained.push_back(fmt::format("{}: {} {}: doc {} vs schema {}", op.name, diff.param,
                                                 drift_kind_name(diff.kind), diff.catalog_side, diff.other_side));
    }
    for (const auto& d : op.schema_drift) {
      if (d.kind == DriftKind::NoSchemaEntry || d.kind == DriftKind::TypeDiffers) continue;
      bool matches = std::any_of(diffs.begin(), diffs.end(), [&](const SignatureDiff& diff) { return drift_covers(d, diff); });
      if (!matches)
        report.stale.push_back(fmt::format("{}: recorded drift '{}' {} matches no difference", op.name, d.param,
                                           drift_kind_name(d.kind)));
    }
  }
  return report;
}

}  // namespace npufuse::catalog
