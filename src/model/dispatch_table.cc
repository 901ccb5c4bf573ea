#include "model/dispatch_table.h"

#include <fmt/format.h>

namespace npufuse::model {

namespace {

std::optional<std::string> string_constant(const ast::expr* e) {
  const auto* c = ast::as<ast::Constant>(e);
  if (!c || c->value.kind != ast::ConstantKind::Str) return std::nullopt;
  return frontend::ast::constant_string(c->value);
}

void add_dict_literal(const ast::Dict& d, DispatchTable& table) {
  for (size_t i = 0; i < d.keys.size; ++i)
    if (auto key = string_constant(d.keys[i])) table.entries[*key] = d.values[i];
}

// A registry class: the one dict literal its body assigns to a class attribute.
const ast::Dict* class_level_dict(const ClassDecl& cls) {
  const ast::Dict* found = nullptr;
  for (const ast::stmt* s : cls.node->body) {
    const ast::expr* value = nullptr;
    if (auto* a = ast::as<ast::Assign>(s)) value = a->value;
    if (auto* an = ast::as<ast::AnnAssign>(s)) value = an->value;
    if (auto* d = ast::as<ast::Dict>(value)) {
      if (found) return nullptr;  // two tables: which one the lookup reads is not known
      found = d;
    }
  }
  return found;
}

// Module-level `TABLE["key"] = f` statements, in every analysed file.
void add_item_assignments(const SourceSet& sources, std::string_view name, DispatchTable& table) {
  for (const auto& f : sources.files()) {
    for (const ast::stmt* s : f->parsed->module->body) {
      auto* a = ast::as<ast::Assign>(s);
      if (!a) continue;
      for (const ast::expr* t : a->targets) {
        auto* sub = ast::as<ast::Subscript>(t);
        auto* base = sub ? ast::as<ast::Name>(sub->value) : nullptr;
        if (!base || base->id != name) continue;
        if (auto key = string_constant(sub->slice)) table.entries[*key] = a->value;
      }
    }
  }
}

}  // namespace

std::optional<DispatchTable> find_dispatch_table(const SourceSet& sources, std::string_view name) {
  const ConstantDecl* c = sources.find_constant(name);
  if (!c) return std::nullopt;
  DispatchTable table;
  table.name = std::string(name);
  table.file = c->file;
  if (auto* d = ast::as<ast::Dict>(c->value)) {
    add_dict_literal(*d, table);
  } else if (auto* call = ast::as<ast::Call>(c->value)) {
    auto* callee = ast::as<ast::Name>(call->func);
    if (!callee) return std::nullopt;
    if (callee->id == "dict") {
      for (const ast::keyword* kw : call->keywords)
        if (ast::present(kw->arg)) table.entries[std::string(kw->arg)] = kw->value;
      for (const ast::expr* arg : call->args)
        if (auto* d = ast::as<ast::Dict>(arg)) add_dict_literal(*d, table);
    } else if (const ClassDecl* cls = sources.find_class(callee->id)) {
      const ast::Dict* d = class_level_dict(*cls);
      if (!d) return std::nullopt;
      add_dict_literal(*d, table);
      table.file = cls->file;
    } else {
      return std::nullopt;
    }
  } else {
    return std::nullopt;
  }
  add_item_assignments(sources, name, table);
  return table;
}

std::optional<std::string> static_string_key(const SourceSet& sources, const ModelFile& file, const ast::expr* key,
                                             const ConfigFieldReader& config) {
  (void)file;
  if (auto s = string_constant(key)) return s;
  if (auto* n = ast::as<ast::Name>(key)) {
    const ConstantDecl* c = sources.find_constant(n->id);
    return c ? string_constant(c->value) : std::nullopt;
  }
  // config.X or self.config.X
  auto* a = ast::as<ast::Attribute>(key);
  if (!a || !config) return std::nullopt;
  std::string owner = dotted_name(a->value);
  if (owner != "config" && owner != "self.config") return std::nullopt;
  std::string field(a->attr);
  const nlohmann::json* v = config(field);
  if (!v && field.size() > 1 && field[0] == '_') v = config(field.substr(1));
  if (v && v->is_string()) return v->get<std::string>();
  return std::nullopt;
}

DispatchEntry dispatch_entry(const SourceSet& sources, const ModelFile& file, const ast::Subscript& lookup,
                             const ConfigFieldReader& config, const std::optional<std::string>& default_key) {
  DispatchEntry out;
  std::string table_text(file.text_of(lookup.value));
  std::string key_text(file.text_of(lookup.slice));
  auto* table_name = ast::as<ast::Name>(lookup.value);
  std::optional<DispatchTable> table = table_name ? find_dispatch_table(sources, table_name->id) : std::nullopt;
  if (!table) {
    out.why_unresolved = fmt::format("table {} is not defined by literals in the analysed files", table_text);
    return out;
  }
  std::optional<std::string> key = static_string_key(sources, file, lookup.slice, config);
  if (!key) key = default_key;
  if (!key) {
    out.why_unresolved = fmt::format("key {} is not known statically", key_text);
    return out;
  }
  out.key = *key;
  auto it = table->entries.find(*key);
  if (it == table->entries.end()) {
    out.why_unresolved = fmt::format("{} has no entry '{}'", table_text, *key);
    return out;
  }
  out.entry = it->second;
  return out;
}

DispatchTarget resolve_dispatch(const SourceSet& sources, const ModelFile& file, const ast::Subscript& lookup,
                                const ConfigFieldReader& config) {
  DispatchTarget out;
  DispatchEntry e = dispatch_entry(sources, file, lookup, config);
  if (!e.entry) {
    out.why_unresolved = e.why_unresolved;
    return out;
  }
  auto* fn_name = ast::as<ast::Name>(e.entry);
  out.function = fn_name ? sources.find_function(fn_name->id) : nullptr;
  if (!out.function)
    out.why_unresolved = fmt::format("{}['{}'] is not a function of the analysed files", file.text_of(lookup.value), e.key);
  return out;
}

std::optional<TableGet> table_get(const ast::Call& call) {
  auto* a = ast::as<ast::Attribute>(call.func);
  auto* table = a ? ast::as<ast::Name>(a->value) : nullptr;
  if (!table || call.args.size != 2 || (a->attr != "get_interface" && a->attr != "get")) return std::nullopt;
  return TableGet{table, call.args[0], call.args[1], a->attr == "get_interface"};
}

}  // namespace npufuse::model
