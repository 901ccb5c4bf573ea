#pragma once
// An HF-style config.json, the source of the numbers a model's code leaves
// symbolic (`config.hidden_size`). Keys are read by dotted path
// ("rope_scaling.factor"); every read is remembered so the inventory can list
// which config fields the code uses and which of them the file lacks.
// A multimodal checkpoint nests its text model under `text_config` (or
// `language_config`, `llm_config`); a key the top level lacks is looked up
// there, since the text model's code reads it as `config.<key>`.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace npufuse::model {

class ModelConfig {
 public:
  ModelConfig() = default;
  // Throws frontend::SyntaxError (file:line:col) for invalid JSON or a
  // top level that is not an object; FileError when unreadable.
  static ModelConfig load(const std::string& path);
  static ModelConfig from_json(nlohmann::json j, std::string origin);

  bool loaded() const { return loaded_; }
  const std::string& origin() const { return origin_; }
  const nlohmann::json& root() const { return root_; }

  // The value at a dotted key path, or null when absent (or when no config):
  // the top level first, then the text model's nested config.
  const nlohmann::json* find(std::string_view dotted_key) const;
  // The key of the nested text-model config whose value find() returned
  // last for `dotted_key` ("" when it came from the top level or is absent).
  std::string nested_origin(std::string_view dotted_key) const;
  // True when the config nests other configs (an object with its own
  // `model_type`): a key missing from it may be set by one of them or read
  // by the code from elsewhere, so its absence proves nothing.
  bool has_sub_configs() const;

 private:
  // find(), and in *nested_key the nested config it came from (untouched
  // when the top level has it).
  const nlohmann::json* find_where(std::string_view dotted_key, const char** nested_key) const;

  bool loaded_ = false;
  std::string origin_;
  nlohmann::json root_ = nlohmann::json::object();
};

}  // namespace npufuse::model
