#include "catalog/operator_reader.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include "catalog/strict_table.h"
#include "check/expr_parser.h"

namespace npufuse::catalog {

std::string toml_parse_error_text(const toml::parse_error& e, const std::string& file);  // fact_vocabulary.cc

namespace {

// Parses an expression held in a TOML string; a syntax error names the key's
// position and the column inside the expression text.
std::shared_ptr<const check::Expr> parse_expression_at(StrictTable& t, std::string_view key,
                                                       const std::string& text) {
  try {
    return check::parse_constraint_expression(text);
  } catch (const check::ExprSyntaxError& e) {
    std::string at = t.where_key(key);
    t.diags().errors.push_back(
        fmt::format("{}: bad expression in '{}' (column {} of `{}`): {}", at, key, e.col(), text, e.what()));
    return nullptr;
  }
}

Param read_param(const toml::table& tbl, const std::string& file, Diagnostics& diags, int index, bool& seen_star) {
  StrictTable t(tbl, file, diags, fmt::format("[[params]] #{}", index));
  Param p;
  p.name = t.string("name", true).value_or("");
  p.type = t.string("type", true).value_or("");
  p.default_value = t.string("default");
  p.kw_only = t.boolean("kw_only").value_or(false);
  if (p.kw_only) seen_star = true;
  else if (seen_star) t.error(&tbl, fmt::format("parameter '{}' follows a kw_only one but is not kw_only", p.name));
  p.doc = t.localized("doc");
  t.reject_unknown_keys();
  return p;
}

Output read_output(const toml::table& tbl, const std::string& file, Diagnostics& diags, int index) {
  StrictTable t(tbl, file, diags, fmt::format("[[outputs]] #{}", index));
  Output o;
  o.name = t.string("name", true).value_or("");
  o.type = t.string("type", true).value_or("");
  o.doc = t.localized("doc");
  t.reject_unknown_keys();
  return o;
}

Constraint read_constraint(const toml::table& tbl, const std::string& file, Diagnostics& diags, int index) {
  StrictTable t(tbl, file, diags, fmt::format("[[constraints]] #{}", index));
  Constraint c;
  c.id = t.string("id", true).value_or("");
  c.origin = t.where(nullptr);
  c.when_text = t.string("when").value_or("");
  c.require_text = t.string("require", true).value_or("");
  if (!c.when_text.empty()) c.when = parse_expression_at(t, "when", c.when_text);
  if (!c.require_text.empty()) c.require = parse_expression_at(t, "require", c.require_text);
  std::string severity = t.string("severity", true).value_or("error");
  if (severity == "error") c.severity = Severity::Error;
  else if (severity == "warning") c.severity = Severity::Warning;
  else t.error(tbl.get("severity"), fmt::format("severity must be \"error\" or \"warning\", not \"{}\"", severity));
  c.message = t.localized("message", /*require_en=*/true);
  c.doc = t.string("doc", true).value_or("");
  t.reject_unknown_keys();
  return c;
}

Pitfall read_pitfall(const toml::table& tbl, const std::string& file, Diagnostics& diags, int index) {
  StrictTable t(tbl, file, diags, fmt::format("[[pitfalls]] #{}", index));
  Pitfall p;
  p.text.en = t.string("en", true).value_or("");
  p.text.zh = t.string("zh").value_or("");
  p.source = t.string("source").value_or("");
  t.reject_unknown_keys();
  return p;
}

SchemaDrift read_drift(const toml::table& tbl, const std::string& file, Diagnostics& diags, int index) {
  StrictTable t(tbl, file, diags, fmt::format("[[schema_drift]] #{}", index));
  SchemaDrift d;
  std::string kind = t.string("kind", true).value_or("");
  if (auto k = parse_drift_kind(kind)) d.kind = *k;
  else if (!kind.empty())
    t.error(tbl.get("kind"), fmt::format("unknown drift kind '{}' (see docs/catalog-format.md)", kind));
  d.param = t.string("param", d.kind != DriftKind::NoSchemaEntry).value_or("");
  d.note = t.string("note", true).value_or("");
  t.reject_unknown_keys();
  return d;
}

// TOML puts every key written after a `[[params]]` (or any `[[...]]`)
// header into that array's last table. Entries written in the layout of
// docs/catalog-format.md therefore carry operator keys such as `dtypes`,
// `versions.*` or `related` inside their last [[outputs]] / [[constraints]] /
// [[pitfalls]] table. Those keys mean nothing there, so they are moved back
// to the operator; a key given in both places is an error.
void hoist_operator_keys(toml::table& root, const std::string& file, Diagnostics& diags) {
  static const char* kOperatorKeys[] = {"family",  "status",      "summary", "description", "products",
                                        "schema_line", "schema_name", "dtypes",  "layouts", "versions",
                                        "related", "keywords"};
  static const char* kArrays[] = {"params", "outputs", "constraints", "pitfalls", "schema_drift"};
  for (const char* array_key : kArrays) {
    toml::array* arr = root.get_as<toml::array>(array_key);
    if (!arr) continue;
    for (toml::node& element : *arr) {
      toml::table* sub = element.as_table();
      if (!sub) continue;
      for (const char* key : kOperatorKeys) {
        toml::node* misplaced = sub->get(key);
        if (!misplaced) continue;
        if (root.contains(key)) {
          diags.errors.push_back(fmt::format("{}:{}:{}: '{}' is given twice: at the top and inside a [[{}]] table",
                                             file, misplaced->source().begin.line, misplaced->source().begin.column,
                                             key, array_key));
          continue;
        }
        misplaced->visit([&](auto& node) { root.insert(key, node); });
        sub->erase(key);
      }
    }
  }
}

}  // namespace

std::optional<Operator> read_operator(std::string_view text, const std::string& file, Diagnostics& diags) {
  toml::table root;
  try {
    root = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    diags.errors.push_back(toml_parse_error_text(e, file));
    return std::nullopt;
  }
  size_t errors_before = diags.errors.size();
  hoist_operator_keys(root, file, diags);
  StrictTable t(root, file, diags, "the operator");
  Operator op;
  op.path = file;
  op.name = t.string("name", true).value_or("");
  op.family = t.string("family", true).value_or("");
  op.status = t.string("status", true).value_or("");
  op.summary = t.localized("summary", true, true);
  op.description = t.localized("description");
  op.products = t.string_list("products", true);
  op.doc = t.localized("doc");
  op.schema_line = t.integer("schema_line");
  op.schema_name = t.string("schema_name").value_or("");
  int i = 0;
  bool seen_star = false;
  for (const auto* p : t.tables("params")) op.params.push_back(read_param(*p, file, diags, ++i, seen_star));
  i = 0;
  for (const auto* o : t.tables("outputs")) op.outputs.push_back(read_output(*o, file, diags, ++i));
  op.dtypes = t.string_list("dtypes");
  op.layouts = t.string_list("layouts");
  i = 0;
  for (const auto* c : t.tables("constraints")) op.constraints.push_back(read_constraint(*c, file, diags, ++i));
  if (const toml::table* v = t.table("versions")) {
    StrictTable versions(*v, file, diags, "'versions'");
    op.versions_torch_npu = versions.string("torch_npu").value_or("");
    op.versions_cann = versions.string("cann").value_or("");
    versions.reject_unknown_keys();
  }
  i = 0;
  for (const auto* p : t.tables("pitfalls")) op.pitfalls.push_back(read_pitfall(*p, file, diags, ++i));
  op.related = t.string_list("related");
  i = 0;
  for (const auto* d : t.tables("schema_drift")) op.schema_drift.push_back(read_drift(*d, file, diags, ++i));
  if (const toml::table* k = t.table("keywords")) {
    StrictTable keywords(*k, file, diags, "'keywords'");
    op.keywords_en = keywords.string_list("en");
    op.keywords_zh = keywords.string_list("zh");
    keywords.reject_unknown_keys();
  }
  t.reject_unknown_keys();
  if (diags.errors.size() != errors_before) return std::nullopt;
  return op;
}

}  // namespace npufuse::catalog
