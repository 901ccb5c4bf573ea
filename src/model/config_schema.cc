#include "model/config_schema.h"

#include <map>
#include <optional>

namespace npufuse::model {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool looks_like_config_class(const ClassDecl& c) {
  for (const ast::expr* d : c.node->decorator_list) {
    std::string name = dotted_name(d);
    if (auto* call = ast::as<ast::Call>(d)) name = dotted_name(call->func);
    if (name == "dataclass" || name == "dataclasses.dataclass") return true;
  }
  for (const ast::expr* b : c.node->bases) {
    std::string name = dotted_name(b);
    if (ends_with(name, "PretrainedConfig") || ends_with(name, "PreTrainedConfig")) return true;
  }
  std::string_view n = c.node->name;
  return ends_with(n, "Config") || ends_with(n, "Args") || ends_with(n, "Arguments");
}

std::string constant_text(const ast::expr* e) {
  if (auto* c = ast::as<ast::Constant>(e); c && c->value.kind == ast::ConstantKind::Str)
    return ast::constant_string(c->value);
  return {};
}

struct KeyPath {
  std::string key;
  const ast::expr* default_value = nullptr;
};

// The config.json key an expression reads from the dict parameter of a
// filling function: d["k"], d.get("k", default), (d.get("k") or default),
// and the same on a local bound to a nested dict (rope = d.get("rope_scaling") or {}).
KeyPath key_path(const ast::expr* e, const std::map<std::string, const ast::expr*>& locals, int depth = 0) {
  if (depth > 8 || !e) return {};
  auto prefix_of = [&](const ast::expr* base) -> std::optional<std::string> {
    if (auto* n = ast::as<ast::Name>(base)) {
      auto it = locals.find(std::string(n->id));
      if (it == locals.end()) return std::string();  // the dict parameter itself
      KeyPath inner = key_path(it->second, locals, depth + 1);
      if (inner.key.empty()) return std::nullopt;
      return inner.key + ".";
    }
    return std::nullopt;
  };
  if (auto* s = ast::as<ast::Subscript>(e)) {
    std::string k = constant_text(s->slice);
    auto p = prefix_of(s->value);
    if (!k.empty() && p) return {*p + k, nullptr};
  }
  if (auto* c = ast::as<ast::Call>(e)) {
    if (auto* a = ast::as<ast::Attribute>(c->func); a && a->attr == "get" && !c->args.empty()) {
      std::string k = constant_text(c->args[0]);
      auto p = prefix_of(a->value);
      if (!k.empty() && p) return {*p + k, c->args.size > 1 ? c->args[1] : nullptr};
    }
  }
  if (auto* b = ast::as<ast::BoolOp>(e); b && b->op == ast::boolop::Or && b->values.size == 2) {
    KeyPath k = key_path(b->values[0], locals, depth + 1);
    if (!k.key.empty()) {
      if (!k.default_value) k.default_value = b->values[1];
      return k;
    }
  }
  return {};
}

void collect_locals(const Span<ast::stmt*>& body, std::map<std::string, const ast::expr*>& locals) {
  for (const ast::stmt* s : body) {
    if (auto* a = ast::as<ast::Assign>(s)) {
      for (const ast::expr* t : a->targets)
        if (auto* n = ast::as<ast::Name>(t)) locals[std::string(n->id)] = a->value;
    }
  }
}

}  // namespace

std::string hf_key_for_alias(std::string_view field) {
  static const std::map<std::string, std::string, std::less<>> aliases = {
      {"dim", "hidden_size"},
      {"inter_dim", "intermediate_size"},
      {"moe_inter_dim", "moe_intermediate_size"},
      {"n_layers", "num_hidden_layers"},
      {"n_dense_layers", "first_k_dense_replace"},
      {"n_heads", "num_attention_heads"},
      {"n_kv_heads", "num_key_value_heads"},
      {"n_activated_experts", "num_experts_per_tok"},
      {"n_expert_groups", "n_group"},
      {"n_limited_groups", "topk_group"},
      {"route_scale", "routed_scaling_factor"},
      {"score_func", "scoring_func"},
      {"norm_eps", "rms_norm_eps"},
      {"original_seq_len", "rope_scaling.original_max_position_embeddings"},
      {"rope_factor", "rope_scaling.factor"},
      {"beta_fast", "rope_scaling.beta_fast"},
      {"beta_slow", "rope_scaling.beta_slow"},
      {"mscale", "rope_scaling.mscale_all_dim"},
  };
  auto it = aliases.find(field);
  return it == aliases.end() ? std::string() : it->second;
}

bool is_config_parameter_name(std::string_view name) {
  return name == "config" || name == "cfg" || name == "args" || name == "model_args" || name == "hf_config" ||
         name == "model_config" || name == "params";
}

ConfigSchema ConfigSchema::discover(const SourceSet& sources) {
  ConfigSchema schema;
  for (const ClassDecl& c : sources.classes()) {
    if (!looks_like_config_class(c)) continue;
    auto& fields = schema.classes_[std::string(c.node->name)];
    for (const ast::stmt* s : c.node->body) {
      if (auto* an = ast::as<ast::AnnAssign>(s)) {
        if (auto* n = ast::as<ast::Name>(an->target))
          fields[std::string(n->id)] = ConfigField{std::string(n->id), an->value, c.file};
      } else if (auto* fn = ast::as<ast::FunctionDef>(s); fn && fn->name == "__init__") {
        // HF configuration classes: keyword parameters with defaults.
        const ast::arguments* args = fn->args;
        size_t first_default = args->args.size - args->defaults.size;
        for (size_t i = 0; i < args->args.size; ++i) {
          std::string name(args->args[i]->arg);
          if (name == "self") continue;
          const ast::expr* d = i >= first_default ? args->defaults[i - first_default] : nullptr;
          fields.try_emplace(name, ConfigField{name, d, c.file});
        }
        // self.X = <expression of the parameters>, other than self.X = X.
        for (const ast::stmt* st : fn->body) {
          auto* assign = ast::as<ast::Assign>(st);
          if (!assign || assign->targets.size != 1) continue;
          auto* target = ast::as<ast::Attribute>(assign->targets[0]);
          auto* owner = target ? ast::as<ast::Name>(target->value) : nullptr;
          if (!owner || owner->id != "self") continue;
          if (auto* same = ast::as<ast::Name>(assign->value); same && same->id == target->attr) continue;
          schema.derived_[std::string(c.node->name)][std::string(target->attr)] = DerivedConfigField{assign->value, fn, c.file};
        }
      }
    }
  }
  // Filling functions: ClassName(field=cfg["key"], ...) anywhere at module level.
  for (const auto& file : sources.files()) {
    for (const ast::stmt* s : file->parsed->module->body) {
      auto* fn = ast::as<ast::FunctionDef>(s);
      if (!fn) continue;
      std::map<std::string, const ast::expr*> locals;
      collect_locals(fn->body, locals);
      for (const ast::stmt* st : fn->body) {
        const ast::expr* value = nullptr;
        if (auto* a = ast::as<ast::Assign>(st)) value = a->value;
        if (auto* r = ast::as<ast::Return>(st)) value = r->value;
        auto* call = ast::as<ast::Call>(value);
        if (!call) continue;
        std::string cls = dotted_name(call->func);
        auto it = schema.classes_.find(cls);
        if (it == schema.classes_.end()) continue;
        for (const ast::keyword* kw : call->keywords) {
          if (!ast::present(kw->arg)) continue;
          KeyPath k = key_path(kw->value, locals);
          if (k.key.empty()) continue;
          ConfigField& f = it->second[std::string(kw->arg)];
          f.key = k.key;
          if (k.default_value) {
            f.default_value = k.default_value;
            f.file = file.get();
          }
        }
      }
    }
  }
  return schema;
}

const DerivedConfigField* ConfigSchema::derived(std::string_view cls, std::string_view attr) const {
  if (auto it = derived_.find(cls); it != derived_.end()) {
    auto f = it->second.find(attr);
    return f == it->second.end() ? nullptr : &f->second;
  }
  for (const auto& [name, fields] : derived_) {
    auto f = fields.find(attr);
    if (f != fields.end()) return &f->second;
  }
  return nullptr;
}

bool ConfigSchema::is_config_class(std::string_view name) const {
  if (classes_.count(name)) return true;
  return ends_with(name, "Config") || ends_with(name, "Args");
}

ConfigField ConfigSchema::field(std::string_view cls, std::string_view attr) const {
  auto it = classes_.find(cls);
  if (it != classes_.end()) {
    auto f = it->second.find(attr);
    if (f != it->second.end()) return f->second;
  }
  return ConfigField{std::string(attr), nullptr, nullptr};
}

}  // namespace npufuse::model
