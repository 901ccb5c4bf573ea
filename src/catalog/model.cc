#include "catalog/model.h"

namespace npufuse::catalog {

namespace {
struct DriftName {
  DriftKind kind;
  const char* name;
};
constexpr DriftName kDriftNames[] = {
    {DriftKind::ExtraInSchema, "extra_in_schema"}, {DriftKind::MissingInSchema, "missing_in_schema"},
    {DriftKind::DefaultDiffers, "default_differs"}, {DriftKind::OrderDiffers, "order_differs"},
    {DriftKind::KwOnlyDiffers, "kw_only_differs"}, {DriftKind::TypeDiffers, "type_differs"},
    {DriftKind::NameDiffers, "name_differs"},       {DriftKind::NoSchemaEntry, "no_schema_entry"},
};
}  // namespace

const char* drift_kind_name(DriftKind k) {
  for (const auto& d : kDriftNames)
    if (d.kind == k) return d.name;
  return "?";
}

std::optional<DriftKind> parse_drift_kind(std::string_view text) {
  for (const auto& d : kDriftNames)
    if (text == d.name) return d.kind;
  return std::nullopt;
}

const std::vector<std::string>& known_families() {
  static const std::vector<std::string> v = {"norm", "rope", "attention", "mla", "kv_cache",
                                             "moe",  "ffn",  "quant",     "matmul", "other"};
  return v;
}

const std::vector<std::string>& known_statuses() {
  static const std::vector<std::string> v = {"stable", "beta", "undocumented"};
  return v;
}

const std::vector<std::string>& known_products() {
  static const std::vector<std::string> v = {"A2", "A3", "inference", "training", "950"};
  return v;
}

}  // namespace npufuse::catalog
