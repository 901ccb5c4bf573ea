#include "model/inventory.h"

#include <map>

#include "model/config_arms.h"

namespace npufuse::model {

const std::vector<std::pair<std::string, std::string>>& pending_inventory_parts() {
  // Sub-chains, attention-core layouts and escaping intermediates are in
  // `chains`; the per-value consumer lists behind them stay internal.
  static const std::vector<std::pair<std::string, std::string>> parts = {
      {"dataflow", "SSA values per forward with submodules and helpers inlined (printed by `inspect --dataflow CLASS`, not part of the inventory)"},
  };
  return parts;
}

namespace {

// A window derived as 0 because the config has no `sliding_window`, while
// the code reads a window under a name the config lacks or the binder does
// not know (`config.attention_window`, `config.local_window`): the absence is
// no evidence of full attention, so the window is unknown and asked for.
void window_read_by_code(Inventory& inv) {
  Fact* window = nullptr;
  for (Fact& f : inv.facts)
    if (f.name == "sliding_window") window = &f;
  if (!window || !window->known || window->source.rfind("derived: no sliding_window", 0) != 0) return;
  for (const ConfigFieldUse& use : inv.config_fields) {
    const std::string& k = use.key;
    bool windowish = k.find("window") != std::string::npos && k.find("pattern") == std::string::npos &&
                     k.rfind("use_", 0) != 0;
    if (!windowish) continue;
    *window = Fact{"sliding_window", false, nullptr,
                   "unknown: the code reads config." + k + (use.found ? "" : " (absent from the config)") +
                       ", a window the config gives under no name the tool knows"};
    return;
  }
}

}  // namespace

Inventory build_inventory(const SourceSet& sources, const ModelConfig& config) {
  Inventory inv;
  for (const auto& f : sources.files()) inv.files.push_back(f->path);
  inv.config_path = config.loaded() ? config.origin() : "";

  ConfigSchema schema = ConfigSchema::discover(sources);
  Evaluator ev(sources, config, schema);
  inv.roles = std::make_shared<const RoleTable>(RoleTable::infer(sources, ev));
  const RoleTable& roles = *inv.roles;
  for (const ClassDecl* c : roles.module_classes()) {
    ClassSummary s;
    s.cls = c;
    s.where = c->file->span_of(c->node);
    for (const ast::expr* b : c->node->bases) s.bases.emplace_back(c->file->text_of(b));
    if (const ClassRole* r = roles.find(c->node->name)) s.role = *r;
    if (const ClassInstance* inst = roles.standalone(c->node->name)) s.attributes = inst->attributes;
    if (const ForwardCensus* census = roles.census(c->node->name)) {
      s.forward_ops.assign(census->ops.begin(), census->ops.end());
      s.forward_calls = census->child_calls;
    }
    inv.classes.push_back(std::move(s));
  }
  inv.structure = build_structure(sources, ev, roles);
  inv.facts = bind_facts(config);
  inv.branches = find_branches(sources, roles.module_classes());
  evaluate_config_arms(inv.branches, roles, ev);
  inv.kv_cache = find_kv_cache(sources, roles.module_classes());
  // The config picks dispatch-table entries (`ALL_ATTENTION_FUNCTIONS[config._attn_implementation]`).
  RoleTableSubmodules lookup(roles, &config);
  inv.chains = find_subchains(sources, roles, inv.structure, lookup, inv.branches, inv.kv_cache);

  std::map<std::string, size_t> index;
  for (const ConfigRead& r : ev.reads()) {
    auto [it, fresh] = index.try_emplace(r.key, inv.config_fields.size());
    if (fresh) inv.config_fields.push_back(ConfigFieldUse{r.key, r.found, {}});
    ConfigFieldUse& use = inv.config_fields[it->second];
    bool seen = false;
    for (const SourceSpan& w : use.where) seen = seen || (w.file == r.where.file && w.line == r.where.line);
    if (!seen && use.where.size() < 8) use.where.push_back(r.where);
  }
  window_read_by_code(inv);
  for (const auto& [name, what] : pending_inventory_parts()) inv.not_computed.push_back(name);
  return inv;
}

}  // namespace npufuse::model
