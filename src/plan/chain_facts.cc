#include "plan/chain_facts.h"

#include <fmt/format.h>

#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "util/identifier.h"

namespace npufuse::plan {
namespace {

// A module weight's dims as the model builds them, with where they come from.
struct WeightDims {
  std::vector<int64_t> dims;
  std::string source;  // "self.gate_proj (torch.nn.Linear out = config.intermediate_size)"
};

std::optional<int64_t> size_of(const model::ModuleNode& node, const std::string& label, std::string* written) {
  for (const model::SizeValue& s : node.sizes) {
    if (s.label != label || !s.value.is_known() || !s.value.value.is_number_integer()) continue;
    if (written) *written = s.written;
    return s.value.value.get<int64_t>();
  }
  return std::nullopt;
}

bool is_linear(const model::ModuleNode& node) { return size_of(node, "out", nullptr) && size_of(node, "in", nullptr); }

// The weight of a module node: a linear layer's [out, in], a norm's [dim].
std::optional<WeightDims> weight_of(const model::ModuleNode& node, const std::string& written_path) {
  std::string out_text, in_text, dim_text;
  if (auto out = size_of(node, "out", &out_text)) {
    if (auto in = size_of(node, "in", &in_text))
      return WeightDims{{*out, *in}, fmt::format("{} ({} [out, in] = [{}, {}])", written_path, node.class_name,
                                                 out_text, in_text)};
  }
  if (auto dim = size_of(node, "dim", &dim_text))
    return WeightDims{{*dim}, fmt::format("{} ({} dim = {})", written_path, node.class_name, dim_text)};
  return std::nullopt;
}

void nodes_of_class(const model::ModuleNode& node, const std::string& cls, std::vector<const model::ModuleNode*>& out) {
  if (node.class_name == cls) out.push_back(&node);
  for (const model::ModuleNode& c : node.children) nodes_of_class(c, cls, out);
}

const model::ModuleNode* child_named(const model::ModuleNode& node, const std::string& attribute) {
  for (const model::ModuleNode& c : node.children)
    if (c.attribute == attribute) return &c;
  return nullptr;
}

std::vector<std::string> split_dots(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    out.push_back(s.substr(start, dot - start));
    if (dot == std::string::npos) return out;
    start = dot + 1;
  }
}

// "self.a.b.weight" read in an instance of `owner`: the module a.b and the
// parameter name. "self.a.b(x)": the module a.b called (parameter "()").
struct BoundModule {
  const model::ModuleNode* node = nullptr;
  std::string parameter;
};

BoundModule resolve(const model::ModuleNode& owner, const std::string& text) {
  if (text.rfind("self.", 0) != 0) return {};
  std::string path = text.substr(5);
  std::string parameter;
  if (size_t paren = path.find('('); paren != std::string::npos) {
    path = path.substr(0, paren);
    parameter = "()";
  }
  std::vector<std::string> parts = split_dots(path);
  if (parameter.empty()) {
    parameter = parts.back();
    parts.pop_back();
  }
  const model::ModuleNode* node = &owner;
  for (const std::string& p : parts) {
    if (!is_identifier(p) || !(node = child_named(*node, p))) return {};
  }
  return BoundModule{node, parameter};
}

// A shape entry as written in RULE["inputs"]: a symbol, an int, or a product
// or sum of those ("2 * I"); nullopt when a symbol is not solved.
std::optional<int64_t> evaluate_size(const std::string& text, const std::map<std::string, int64_t>& symbols) {
  int64_t sum = 0, product = 1;
  std::string token;
  auto take = [&]() -> bool {
    std::string t;
    for (char c : token)
      if (!std::isspace(static_cast<unsigned char>(c))) t += c;
    token.clear();
    if (t.empty()) return false;
    if (std::isdigit(static_cast<unsigned char>(t[0]))) {
      for (char c : t)
        if (!std::isdigit(static_cast<unsigned char>(c))) return false;
      product *= std::stoll(t);
      return true;
    }
    auto it = symbols.find(t);
    if (it == symbols.end()) return false;
    product *= it->second;
    return true;
  };
  for (char c : text) {
    if (c == '*' || c == '+') {
      if (!take()) return std::nullopt;
      if (c == '+') {
        sum += product;
        product = 1;
      }
    } else {
      token += c;
    }
  }
  if (!take()) return std::nullopt;
  return sum + product;
}

std::vector<std::string> declared_shape(const rules::Rule& rule, const std::string& input) {
  std::vector<std::string> out;
  const nlohmann::ordered_json& inputs = rule.literal.contains("inputs") ? rule.literal["inputs"] : nlohmann::ordered_json();
  if (!inputs.is_object() || !inputs.contains(input)) return out;
  const nlohmann::ordered_json& shape = inputs[input].contains("shape") ? inputs[input]["shape"] : nlohmann::ordered_json();
  if (!shape.is_array()) return out;
  for (const auto& d : shape) out.push_back(d.is_string() ? d.get<std::string>() : d.dump());
  return out;
}

// One solved value and where it came from; several values: the instances disagree.
struct Solved {
  std::map<int64_t, std::string> values;  // value -> derivation
};

void solve(const rules::Rule& rule, const std::string& parameter, const WeightDims& weight,
           std::map<std::string, Solved>& symbols) {
  std::vector<std::string> shape = declared_shape(rule, parameter);
  if (shape.size() != weight.dims.size()) return;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!is_identifier(shape[i])) continue;
    symbols[shape[i]].values.try_emplace(
        weight.dims[i], fmt::format("{} = {}: {} is {}", shape[i], weight.dims[i], parameter, weight.source));
  }
}

std::string first_shaped_input(const rules::Rule& rule) {
  if (!rule.literal.contains("inputs") || !rule.literal["inputs"].is_object()) return "";
  for (const auto& [name, spec] : rule.literal["inputs"].items())
    if (spec.is_object() && spec.contains("shape") && spec["shape"].is_array() && !spec["shape"].empty()) return name;
  return "";
}

}  // namespace

ChainFacts derive_chain_facts(const rules::Rule& rule, const std::vector<const MatchSite*>& sites,
                              const model::ModelStructure* structure) {
  ChainFacts out;
  if (!structure || !structure->root || rule.facts.count("last_dim")) return out;
  std::map<std::string, Solved> symbols;
  // The main input's last axis read off a linear layer's call, per value.
  std::string main_input = first_shaped_input(rule);
  Solved called_width;
  for (const MatchSite* site : sites) {
    if (site->owner_class.empty()) continue;
    std::vector<const model::ModuleNode*> owners;
    nodes_of_class(*structure->root, site->owner_class, owners);
    for (const match::Binding& b : site->match.bindings) {
      for (const model::ModuleNode* owner : owners) {
        BoundModule bound = resolve(*owner, b.text);
        if (!bound.node) continue;
        if (bound.parameter == "weight") {
          if (std::optional<WeightDims> w = weight_of(*bound.node, b.text)) solve(rule, b.parameter, *w, symbols);
        } else if (bound.parameter == "()" && b.parameter == main_input && is_linear(*bound.node)) {
          std::string written;
          int64_t width = *size_of(*bound.node, "out", &written);
          called_width.values.try_emplace(
              width, fmt::format("{} = {}: the output of {} ({} out = {})", main_input, b.text, bound.node->path,
                                 bound.node->class_name, written));
        }
      }
    }
  }

  // Which size is the operator's main input's last axis.
  std::string last_axis;
  auto glu = rule.facts.find("glu_order");
  bool merged_gate_up = glu != rule.facts.end() && glu->second.find("separate") != std::string::npos;
  if (merged_gate_up) {
    // The first declared input named for the gate: its first axis is the gate's width.
    std::vector<std::string> gate_shape;
    if (rule.literal.contains("inputs") && rule.literal["inputs"].is_object())
      for (const auto& [name, spec] : rule.literal["inputs"].items())
        if (name.find("gate") != std::string::npos && gate_shape.empty()) gate_shape = declared_shape(rule, name);
    if (!gate_shape.empty()) last_axis = "2 * " + gate_shape.front();
  } else if (!main_input.empty()) {
    last_axis = declared_shape(rule, main_input).back();
  }

  std::set<int64_t> candidates;
  std::vector<std::string> derivations;
  if (!called_width.values.empty()) {
    for (const auto& [v, why] : called_width.values) {
      candidates.insert(v);
      derivations.push_back(why);
    }
  } else if (!last_axis.empty()) {
    // Each combination would be too much: a symbol the instances disagree on
    // is reported, and the fact stays unknown.
    std::map<std::string, int64_t> single;
    for (const auto& [name, solved] : symbols) {
      if (solved.values.size() == 1) {
        single[name] = solved.values.begin()->first;
        continue;
      }
      std::string all;
      for (const auto& [v, why] : solved.values) all += (all.empty() ? "" : "; ") + why;
      out.notes.push_back(fmt::format("last_dim not derived: {} differs between the chain's instances ({})", name, all));
    }
    if (std::optional<int64_t> v = evaluate_size(last_axis, single)) {
      candidates.insert(*v);
      std::string used;
      for (const auto& [name, solved] : symbols)
        if (single.count(name) && last_axis.find(name) != std::string::npos)
          used += (used.empty() ? "" : "; ") + solved.values.begin()->second;
      derivations.push_back(fmt::format("{}{} = {}{}", merged_gate_up ? "merged [gate, up] width " : "last axis ",
                                        last_axis, *v, used.empty() ? "" : " (" + used + ")"));
    }
  }
  if (candidates.size() == 1) {
    out.facts.set("last_dim", int64_t{*candidates.begin()}, "derived: " + derivations.front());
  } else if (candidates.size() > 1) {
    std::string all;
    for (const std::string& d : derivations) all += (all.empty() ? "" : "; ") + d;
    out.notes.push_back("last_dim not derived: the chain's instances disagree (" + all + ")");
  }
  return out;
}

}  // namespace npufuse::plan
