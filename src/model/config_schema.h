#pragma once
// How the model's code names config fields. HF models read `config.X` where
// X is the config.json key; standalone scripts define their own argument
// dataclass (`ModelArgs.dim`) and a function that fills it from config.json
// (`dim=cfg["hidden_size"]`). The schema maps such a class's fields to
// config.json keys and keeps each field's default, so `args.dim` resolves to
// `hidden_size` and its value.
#include <map>
#include <string>
#include <string_view>

#include "model/source_set.h"

namespace npufuse::model {

struct ConfigField {
  std::string key;                     // dotted config.json key the field is filled from
  const ast::expr* default_value = nullptr;  // the class's default, or the mapping's
  const ModelFile* file = nullptr;
};

// An attribute an HF config class computes in its __init__ rather than reads
// (`self.qk_head_dim = qk_nope_head_dim + qk_rope_head_dim`); config.json does
// not hold it, so it is evaluated from the fields it is computed from.
struct DerivedConfigField {
  const ast::expr* value = nullptr;
  const ast::FunctionDef* init = nullptr;  // the config class's __init__ (its parameters are the fields)
  const ModelFile* file = nullptr;
};

class ConfigSchema {
 public:
  static ConfigSchema discover(const SourceSet& sources);

  // Whether a class of this name holds configuration (a local dataclass or
  // *Config/*Args class, or a known HF config base).
  bool is_config_class(std::string_view name) const;
  // The field of `cls` called `attr`: its config.json key (the attribute
  // name itself when nothing maps it) and default.
  ConfigField field(std::string_view cls, std::string_view attr) const;
  // A computed attribute of `cls`, or of any config class when `cls` is not known.
  const DerivedConfigField* derived(std::string_view cls, std::string_view attr) const;

 private:
  std::map<std::string, std::map<std::string, ConfigField, std::less<>>, std::less<>> classes_;
  std::map<std::string, std::map<std::string, DerivedConfigField, std::less<>>, std::less<>> derived_;
};

// The HF config.json key for a field name that standalone inference scripts
// use instead (DeepSeek's `dim`, `n_heads`, `inter_dim`, ...); empty when the
// name has no known HF counterpart. Consulted only when the config lacks the
// field under its own name.
std::string hf_key_for_alias(std::string_view field);

// Names that conventionally hold the model config in `__init__(self, config)`.
bool is_config_parameter_name(std::string_view name);

}  // namespace npufuse::model
