#pragma once
// Function tables picked by a key, read statically.
//
// Models choose an implementation through a table lookup:
// `ALL_ATTENTION_FUNCTIONS[self.config._attn_implementation]`,
// `ATTENTION_FUNCTIONS[attn_impl]`. When the table is written in the analysed
// files as literals (a dict literal, `dict(k=f, ...)`, an instance of a local
// class whose body holds one dict literal, plus module-level `TABLE["k"] = f`
// additions) and the key is a string known without running the code (a
// literal, a module constant, a config field), the entry is the function the
// call reaches. Otherwise the lookup stays unresolved, and says why.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/source_set.h"

namespace npufuse::model {

struct DispatchTable {
  std::string name;
  std::map<std::string, const ast::expr*> entries;  // key -> the function expression
  const ModelFile* file = nullptr;                 // where the entries are written
};

// The table a module-level name holds, when it is built from literals in the
// analysed files; nullopt when the name is imported or built otherwise.
std::optional<DispatchTable> find_dispatch_table(const SourceSet& sources, std::string_view name);

// Reads a config field by key (null when absent or no config is loaded).
using ConfigFieldReader = std::function<const nlohmann::json*(std::string_view key)>;

// The string a key expression is known to hold: a literal, a module-level
// string constant, or a config field read as `config.X` / `self.config.X`
// (HF's private `_attn_implementation` also answers to `attn_implementation`).
std::optional<std::string> static_string_key(const SourceSet& sources, const ModelFile& file, const ast::expr* key,
                                             const ConfigFieldReader& config);

// The outcome of looking a function up in a table.
struct DispatchTarget {
  const FunctionDecl* function = nullptr;  // the target, when resolved
  std::string why_unresolved;              // otherwise: what was not known
};

// The entry a lookup `TABLE[key]` reaches: its expression, or null and why
// not. `default_key` stands for a key that is not known statically.
struct DispatchEntry {
  const ast::expr* entry = nullptr;
  std::string key;
  std::string why_unresolved;
};
DispatchEntry dispatch_entry(const SourceSet& sources, const ModelFile& file, const ast::Subscript& lookup,
                             const ConfigFieldReader& config, const std::optional<std::string>& default_key = std::nullopt);

// dispatch_entry's entry as a function of the analysed files.
DispatchTarget resolve_dispatch(const SourceSet& sources, const ModelFile& file, const ast::Subscript& lookup,
                                const ConfigFieldReader& config);

// `TABLE.get_interface(key, default)` or `TABLE.get(key, default)` on a
// name (HF 5's attention and experts dispatch: the default where the key
// picks it, else a table entry): its parts, or nullopt for any other call.
struct TableGet {
  const ast::Name* table = nullptr;
  const ast::expr* key = nullptr;
  const ast::expr* fallback = nullptr;
  bool interface = false;  // get_interface: the default answers to the key "eager"
};
std::optional<TableGet> table_get(const ast::Call& call);

}  // namespace npufuse::model
