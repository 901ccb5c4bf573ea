#pragma once
// One torch_npu operator as the catalog describes it (docs/catalog-format.md).
// The loader fills these from catalog/<family>/<name>.toml; nothing else in
// npufuse restates operator facts.
#include <optional>
#include <string>
#include <vector>

#include "check/constraint.h"
#include "check/text.h"

namespace npufuse::catalog {

using check::Constraint;
using check::Lang;
using check::LocalizedText;
using check::Severity;

struct Param {
  std::string name;
  std::string type;                           // "Tensor?", "int[]", ...
  std::optional<std::string> default_value;   // Python literal text as the doc writes it
  bool kw_only = false;                       // after the `*` marker
  LocalizedText doc;
};

struct Output {
  std::string name;
  std::string type;
  LocalizedText doc;
};

struct Pitfall {
  LocalizedText text;
  std::string source;  // "pitfalls.md", optional
};

// The kinds of difference between the doc prototype and op_plugin_functions.yaml.
enum class DriftKind {
  ExtraInSchema,     // the schema has a parameter the doc lacks
  MissingInSchema,   // the doc has a parameter the schema lacks
  DefaultDiffers,
  OrderDiffers,
  KwOnlyDiffers,
  TypeDiffers,
  NameDiffers,       // same position, different name
  NoSchemaEntry,     // the schema has no function of this name at all
};

const char* drift_kind_name(DriftKind k);
std::optional<DriftKind> parse_drift_kind(std::string_view text);

struct SchemaDrift {
  std::string param;  // empty for NoSchemaEntry
  DriftKind kind = DriftKind::DefaultDiffers;
  std::string note;
};

struct Operator {
  std::string name;
  std::string family;
  std::string status;  // stable | beta | undocumented
  LocalizedText summary;
  LocalizedText description;
  std::vector<std::string> products;
  LocalizedText doc;  // doc page paths under docs/{en,zh}/custom_APIs/
  std::optional<int64_t> schema_line;
  std::string schema_name;  // name in op_plugin_functions.yaml when it differs; empty = name
  std::vector<Param> params;
  std::vector<Output> outputs;
  std::vector<std::string> dtypes;
  std::vector<std::string> layouts;
  std::vector<Constraint> constraints;
  std::string versions_torch_npu;
  std::string versions_cann;
  std::vector<Pitfall> pitfalls;
  std::vector<std::string> related;
  std::vector<SchemaDrift> schema_drift;
  std::vector<std::string> keywords_en;  // extra search words
  std::vector<std::string> keywords_zh;
  std::string path;  // where it was loaded from, for messages

  const std::string& schema_lookup_name() const { return schema_name.empty() ? name : schema_name; }
};

// The allowed values of enumerated keys.
const std::vector<std::string>& known_families();
const std::vector<std::string>& known_statuses();
const std::vector<std::string>& known_products();

}  // namespace npufuse::catalog
