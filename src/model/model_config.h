#pragma once
// An HF-style config.json, the source of the numbers a model's code leaves
// symbolic (`config.hidden_size`). Keys are read by dotted path
// ("rope_scaling.factor"); every read is remembered so the inventory can list
// which config fields the code uses and which of them the file lacks.
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

  // The value at a dotted key path, or null when absent (or when no config).
  const nlohmann::json* find(std::string_view dotted_key) const;

 private:
  bool loaded_ = false;
  std::string origin_;
  nlohmann::json root_ = nlohmann::json::object();
};

}  // namespace npufuse::model
