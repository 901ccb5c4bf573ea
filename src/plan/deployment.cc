#include "plan/deployment.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <stdexcept>

#include "util/file_io.h"

namespace npufuse::plan {
namespace {

std::string place(const std::string& file, const toml::source_region& r) {
  return fmt::format("{}:{}:{}", file, r.begin.line, r.begin.column);
}

// The TOML value as a fact value of the vocabulary's type, or nullopt when
// the types disagree (an int is accepted where a float is expected).
std::optional<check::Value> as_fact_value(const toml::node& n, const std::string& type) {
  if (type == "int") {
    if (auto v = n.value<int64_t>(); v && n.is_integer()) return check::Value(*v);
  } else if (type == "float") {
    if (n.is_floating_point() || n.is_integer()) return check::Value(*n.value<double>());
  } else if (type == "str") {
    if (auto v = n.value<std::string>()) return check::Value(*v);
  } else if (type == "bool") {
    if (auto v = n.value<bool>()) return check::Value(*v);
  }
  return std::nullopt;
}

bool allowed(const check::Value& v, const catalog::FactInfo& info) {
  if (info.values.empty()) return true;
  for (const check::Value& a : info.values)
    if (check::python_equal(a, v)) return true;
  return false;
}

std::string allowed_text(const catalog::FactInfo& info) {
  std::string out;
  for (const check::Value& a : info.values) out += (out.empty() ? "" : ", ") + a.repr();
  return out;
}

}  // namespace

std::vector<DeploymentSetting> parse_deployment(const std::string& text, const std::string& display_path,
                                                const catalog::FactVocabulary& vocabulary) {
  toml::table root;
  try {
    root = toml::parse(text, display_path);
  } catch (const toml::parse_error& e) {
    throw std::invalid_argument(
        fmt::format("{}: TOML syntax error: {}", place(display_path, e.source()), e.description()));
  }
  std::vector<DeploymentSetting> out;
  std::vector<std::string> errors;
  for (const auto& [key, node] : root) {
    std::string name(key.str());
    std::string where = place(display_path, node.source());
    const catalog::FactInfo* info = vocabulary.find(name);
    if (!info) {
      errors.push_back(fmt::format("{}: unknown key '{}': the deployment file takes facts of catalog/facts.toml "
                                   "(tp, ep, dp, chip, quant, stage, batch_size, kv_seq_len, ...)",
                                   where, name));
      continue;
    }
    std::optional<check::Value> value = as_fact_value(node, info->type);
    if (!value) {
      errors.push_back(fmt::format("{}: '{}' must be of type {}", where, name, info->type));
      continue;
    }
    if (!allowed(*value, *info)) {
      errors.push_back(fmt::format("{}: '{}' = {} is not one of {}", where, name, value->repr(), allowed_text(*info)));
      continue;
    }
    out.push_back(DeploymentSetting{name, std::move(*value), where});
  }
  if (!errors.empty()) {
    std::string all;
    for (const std::string& e : errors) all += (all.empty() ? "" : "\n") + e;
    throw std::invalid_argument(all);
  }
  return out;
}

std::vector<DeploymentSetting> load_deployment(const std::string& path, const catalog::FactVocabulary& vocabulary) {
  return parse_deployment(read_file(path, 1 << 20), path, vocabulary);
}

}  // namespace npufuse::plan
