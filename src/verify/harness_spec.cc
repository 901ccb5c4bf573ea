#include "verify/harness_spec.h"

#include <fmt/format.h>

#include "check/evaluate.h"
#include "check/expr_parser.h"

namespace npufuse::verify {
namespace {

std::optional<int64_t> int_fact(const check::FactSet& facts, const std::string& name) {
  const check::Fact* f = facts.find(name);
  if (!f || !f->value.is_int()) return std::nullopt;
  return f->value.as_int();
}

// Elements of all tensor inputs at these sizes; nullopt when a shape entry
// is not a number or an expression the sizes settle.
std::optional<int64_t> input_elements(const nlohmann::ordered_json& inputs, const std::map<std::string, int64_t>& sizes) {
  check::FactSet facts;
  for (const auto& [k, v] : sizes) facts.set(k, check::Value(v), "size");
  int64_t total = 0;
  for (const auto& [name, spec] : inputs.items()) {
    if (!spec.is_object() || spec.value("dtype", "act") == "param") continue;
    if (spec.value("init", "") == "causal_mask_2048") {
      total += 2048 * 2048;
      continue;
    }
    int64_t n = 1;
    const nlohmann::ordered_json shape = spec.value("shape", nlohmann::ordered_json::array());
    for (const auto& dim : shape) {
      if (dim.is_number_integer()) {
        n *= dim.get<int64_t>();
        continue;
      }
      if (!dim.is_string()) return std::nullopt;
      check::Partial p = check::evaluate(*check::parse_constraint_expression(dim.get<std::string>()), facts);
      if (!p.known() || !p.value->is_number()) return std::nullopt;
      n *= static_cast<int64_t>(p.value->as_number());
    }
    total += n;
  }
  return total;
}

}  // namespace

nlohmann::ordered_json HarnessSpec::to_json() const {
  nlohmann::ordered_json j;
  j["candidate"] = candidate;
  j["rule"] = rule;
  j["rule_file"] = rule_file;
  j["dtype"] = dtype;
  j["sizes"] = sizes;
  j["sizes_note"] = sizes_note;
  nlohmann::ordered_json tol = nlohmann::ordered_json::object();
  j["tolerance"] = tol;  // filled by the writer from the tolerance table
  if (cut) {
    j["cut"] = {{"original_module", cut->original_module},
                {"patched_module", cut->patched_module},
                {"function", cut->function},
                {"arguments", cut->arguments}};
  } else {
    j["cut"] = nullptr;
  }
  j["cut_note"] = cut_note;
  j["device"] = device;
  j["timing"] = {{"warmup", warmup}, {"repeats", repeats}};
  j["estimate"] = estimate;
  return j;
}

std::map<std::string, int64_t> configured_sizes(const check::FactSet& facts, const std::string& rule_module,
                                                bool declares_rope_size) {
  bool moe = rule_module.rfind("moe", 0) == 0;
  // A RoPE rule's D is the rotated width (DeepSeek's 64 of a 192 head),
  // unless the rule names that width R beside the whole head's D.
  bool rotated = rule_module == "rope" && !declares_rope_size;
  // The indexer has its own heads and head dim (DeepSeek-V3.2: 64 x 128
  // beside the attention's 128 x 192).
  bool indexer = rule_module == "indexer";
  std::vector<std::pair<std::string, std::vector<std::string>>> names = {
      {"H", {"hidden_size"}},
      {"I", moe ? std::vector<std::string>{"moe_intermediate_size", "intermediate_size"}
                : std::vector<std::string>{"intermediate_size"}},
      {"D", indexer   ? std::vector<std::string>{"index_head_dim"}
            : rotated ? std::vector<std::string>{"rope_dim", "head_dim"}
                      : std::vector<std::string>{"head_dim"}},
      {"N", indexer ? std::vector<std::string>{"index_n_heads"} : std::vector<std::string>{"num_heads"}},
      {"KVN", {"num_kv_heads"}},
      {"E", {"expert_num"}},
      {"K", {"top_k"}},
      {"C", {"kv_lora_rank"}},
      {"R", {"qk_rope_head_dim", "rope_dim"}},
      {"Q", {"q_lora_rank"}},
      {"G", {"group_count"}},
  };
  std::map<std::string, int64_t> out;
  for (const auto& [size, facts_for] : names)
    for (const std::string& f : facts_for)
      if (auto v = int_fact(facts, f); v && *v > 0) {
        out[size] = *v;
        break;
      }
  return out;
}

ChosenSizes choose_sizes(const nlohmann::ordered_json& rule_literal, const std::map<std::string, int64_t>& configured,
                         int64_t batch, int64_t seq, int64_t max_elements) {
  std::map<std::string, int64_t> rule_sizes;
  const nlohmann::ordered_json declared = rule_literal.value("sizes", nlohmann::ordered_json::object());
  for (const auto& [k, v] : declared.items())
    if (v.is_number_integer()) rule_sizes[k] = v.get<int64_t>();
  std::map<std::string, int64_t> run = rule_sizes;
  auto put = [&](const std::string& k, int64_t v) {
    if (run.count(k)) run[k] = v;
  };
  put("B", batch);
  put("S", seq);
  put("T", batch * seq);
  std::map<std::string, int64_t> shape_only = run;
  for (const auto& [k, v] : configured) put(k, v);
  const nlohmann::ordered_json inputs = rule_literal.value("inputs", nlohmann::ordered_json::object());
  std::optional<int64_t> n = input_elements(inputs, run);
  if (n && *n <= max_elements) return {run, ""};
  std::string why = n ? fmt::format("the configured sizes give {} input elements, more than {}", *n, max_elements)
                      : "the inputs' shapes could not be sized with the configured values";
  std::optional<int64_t> m = input_elements(inputs, shape_only);
  if (m && *m <= max_elements) return {shape_only, why + ": the rule's own model sizes are used with B and S"};
  return {rule_sizes, why + ": the rule's own sizes are used"};
}

}  // namespace npufuse::verify
