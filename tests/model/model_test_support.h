#pragma once
// Helpers shared by the model-stage tests: load a test model, find a class,
// an attribute or a node of the instance tree by name.
#include <gtest/gtest.h>

#include <string>

#include "model/inventory.h"

namespace npufuse::model::testing {

inline std::string test_model_path(const std::string& name) {
  return std::string(NPUFUSE_SOURCE_DIR) + "/tests/models/" + name + "/model.py";
}
inline std::string test_model_config(const std::string& name) {
  return std::string(NPUFUSE_SOURCE_DIR) + "/tests/models/" + name + "/config.json";
}

inline const ClassSummary* find_class(const Inventory& inv, std::string_view name) {
  for (const ClassSummary& c : inv.classes)
    if (c.cls->node->name == name) return &c;
  return nullptr;
}

inline const Attribute* find_attribute(const ClassSummary& c, std::string_view name) {
  for (const Attribute& a : c.attributes)
    if (a.name == name) return &a;
  return nullptr;
}

inline const SizeValue* find_size(const std::vector<SizeValue>& sizes, std::string_view label) {
  for (const SizeValue& s : sizes)
    if (s.label == label) return &s;
  return nullptr;
}

inline const ModuleNode* find_path(const ModuleNode& n, std::string_view path) {
  if (n.path == path) return &n;
  for (const ModuleNode& c : n.children)
    if (const ModuleNode* f = find_path(c, path)) return f;
  return nullptr;
}

// A loaded model: sources and config outlive the inventory that points into them.
struct LoadedModel {
  SourceSet sources;
  ModelConfig config;
  Inventory inv;
};

inline std::unique_ptr<LoadedModel> load_model(const std::string& name, bool with_config) {
  auto m = std::make_unique<LoadedModel>(LoadedModel{SourceSet::load({test_model_path(name)}), ModelConfig(), {}});
  if (with_config) m->config = ModelConfig::load(test_model_config(name));
  m->inv = build_inventory(m->sources, m->config);
  return m;
}

}  // namespace npufuse::model::testing
