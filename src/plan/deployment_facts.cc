#include "plan/deployment_facts.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace npufuse::plan {
namespace {

// Config facts that are per-rank in catalog/facts.toml: the config gives the
// whole model, a rank sees its share.
const std::map<std::string, std::string>& per_rank_splits() {
  static const std::map<std::string, std::string> m = {
      {"num_heads", "tp"},          {"num_kv_heads", "tp"}, {"ffn_width", "tp"}, {"expert_num", ""},
      {"linear_num_key_heads", "tp"}, {"linear_num_value_heads", "tp"}};
  return m;
}

std::string dtype_name(const std::string& config_dtype) {
  // config.json writes torch dtypes without the module ("bfloat16") or with it.
  std::string d = config_dtype.rfind("torch.", 0) == 0 ? config_dtype.substr(6) : config_dtype;
  if (d == "half") return "float16";
  if (d == "float") return "float32";
  return d;
}

void check_allowed(const catalog::FactVocabulary& vocabulary, const std::string& fact, const std::string& flag,
                   const check::Value& v) {
  const catalog::FactInfo* info = vocabulary.find(fact);
  if (!info || info->values.empty()) return;
  std::string all;
  for (const check::Value& a : info->values) {
    if (check::python_equal(a, v)) return;
    all += (all.empty() ? "" : ", ") + a.repr();
  }
  throw std::invalid_argument(fmt::format("{}: {} is not one of {}", flag, v.repr(), all));
}

// DeepSeek's inference configs say `"dtype": "fp8"`: the checkpoint's weights
// are block-quantised to float8, the activations are bfloat16.
bool is_fp8_weights(const std::string& dtype) { return dtype == "fp8" || dtype.rfind("float8", 0) == 0; }

const check::Value* known(const check::FactSet& facts, const std::string& name) {
  const check::Fact* f = facts.find(name);
  return f ? &f->value : nullptr;
}

}  // namespace

std::optional<check::Value> json_fact_value(const nlohmann::json& j) {
  if (j.is_boolean()) return check::Value(j.get<bool>());
  if (j.is_number_integer()) return check::Value(j.get<int64_t>());
  if (j.is_number_float()) return check::Value(j.get<double>());
  if (j.is_string()) return check::Value(j.get<std::string>());
  return std::nullopt;
}

DeploymentFacts deployment_facts(const std::vector<model::Fact>& config_facts, const std::vector<DeploymentSetting>& file,
                                 const AnalyzeOptions& options, const catalog::FactVocabulary& vocabulary) {
  DeploymentFacts out;
  check::FactSet& facts = out.facts;
  // Model totals kept aside: the per-rank facts are derived from them below.
  std::map<std::string, std::pair<int64_t, std::string>> totals;

  for (const model::Fact& f : config_facts) {
    if (!f.known) continue;
    std::optional<check::Value> v = json_fact_value(f.value);
    if (!v) continue;
    std::string provenance = f.source + " = " + v->repr();
    if (per_rank_splits().count(f.name) && v->is_int()) {
      totals[f.name] = {v->as_int(), provenance};
      continue;
    }
    if (f.name == "dtype" && v->is_str()) {
      std::string dtype = dtype_name(v->as_str());
      if (is_fp8_weights(dtype))
        facts.set("dtype", "bfloat16",
                  provenance + ": the weights are stored in float8 and the activations run in bfloat16; the "
                               "A2/A3 kernels take the weights converted to bfloat16 (or to int8 with --quant w8a8)");
      else
        facts.set("dtype", dtype, provenance);
    } else if (f.name == "hidden_act") {
      facts.set("activation", *v, provenance);
    } else if (vocabulary.find(f.name)) {
      facts.set(f.name, *v, provenance);
    }
  }
  bool config_loaded = !config_facts.empty() &&
                       std::any_of(config_facts.begin(), config_facts.end(), [](const model::Fact& f) { return f.known; });
  if (config_loaded && !std::any_of(config_facts.begin(), config_facts.end(), [](const model::Fact& f) {
        return f.name == "quantization_config" && f.known;
      }))
    facts.set("quant", "bf16", "config.json has no quantization_config");

  // The deployment file, then the flags over it.
  for (const DeploymentSetting& s : file) {
    if (s.name == "stage") {
      out.stage = s.value.as_str();
      continue;
    }
    facts.set(s.name, s.value, s.where);
  }
  if (!options.chip.empty()) {
    check_allowed(vocabulary, "chip", "--chip", check::Value(options.chip));
    facts.set("chip", options.chip, "--chip");
  }
  if (!options.quant.empty()) {
    check_allowed(vocabulary, "quant", "--quant", check::Value(options.quant));
    facts.set("quant", options.quant, "--quant");
  }
  if (const check::Value* q = known(facts, "quant"); q && q->is_str()) {
    const std::string scheme = q->as_str();
    // The KV cache's quantisation follows from the scheme unless given: C8
    // keeps it int8 per token and 128-wide tile (kv_cache_quant_mode 3, the
    // reference MLA chains' C8 setting); the other schemes leave it unquantised.
    if (!known(facts, "kv_cache_quant_mode")) {
      bool c8 = scheme == "w8a8c8";
      facts.set("kv_cache_quant_mode", int64_t{c8 ? 3 : 0},
                fmt::format("quant = '{}': {}", scheme,
                            c8 ? "C8 keeps the KV cache int8 per token and 128-wide tile" : "the KV cache is not quantised"));
    }
    // Unquantised weights leave the MLA prolog nothing to dequantise; a
    // quantised scheme may map to mode 1 (W_uq_qr only) or 2 (all), which the
    // deployment has to say.
    if (scheme == "bf16" && !known(facts, "weight_quant_mode"))
      facts.set("weight_quant_mode", int64_t{0}, "quant = 'bf16': the weights are not quantised");
  }
  if (!options.torch_npu_version.empty()) facts.set("torch_npu_version", options.torch_npu_version, "--torch-npu-version");
  for (auto [name, value] : {std::pair{"tp", options.tp}, std::pair{"ep", options.ep}, std::pair{"dp", options.dp}}) {
    if (value < 0) throw std::invalid_argument(fmt::format("--{}: {} is not a world size", name, value));
    if (value > 0) facts.set(name, int64_t{value}, std::string("--") + name);
  }
  if (options.stage != "both") {
    if (options.stage != "prefill" && options.stage != "decode")
      throw std::invalid_argument(fmt::format("--stage: '{}' is not one of prefill, decode, both", options.stage));
    out.stage = options.stage;
  }

  if (const check::Value* d = known(facts, "dtype"); d && d->is_str()) {
    static const std::map<std::string, int64_t> bytes = {
        {"float16", 2}, {"bfloat16", 2}, {"float32", 4}, {"int8", 1}};
    if (auto it = bytes.find(d->as_str()); it != bytes.end())
      facts.set("dtype_bytes", it->second, "derived from dtype " + d->as_str());
  }

  // No tensor-parallel size anywhere: the plan is for one card, said as an
  // assumption. A deployment file that leaves tp out is taken as meant (it
  // states the deployment), so the per-rank heads stay unknown there.
  if (!facts.find("tp") && file.empty() &&
      (totals.count("num_heads") || totals.count("num_kv_heads") || totals.count("linear_num_key_heads"))) {
    facts.set("tp", int64_t{1},
              "assumed: no --tp and no --deploy file, so one rank holds every head (tp = 1); pass --tp N for a "
              "tensor-parallel deployment");
    out.assumed.push_back("tp");
  }

  // Per-rank shares. The file may state them directly; otherwise they come
  // from the totals and the split, and stay unknown without the split.
  const check::Value* tp = known(facts, "tp");
  const check::Value* ep = known(facts, "ep");
  auto per_rank = [&](const std::string& fact, const std::string& total_name, const check::Value* split,
                      const std::string& split_flag, bool at_least_one) {
    auto it = totals.find(total_name);
    if (it == totals.end() || facts.find(fact)) return;
    auto [total, provenance] = it->second;
    if (!split || !split->is_int() || split->as_int() <= 0) {
      out.hints[fact] = fmt::format("{} in total ({}); the per-rank value needs {}", total, provenance, split_flag);
      return;
    }
    int64_t share = total / split->as_int();
    if (at_least_one && share < 1) share = 1;
    facts.set(fact, share, fmt::format("{} / {} {}", provenance, split_flag, split->as_int()));
  };
  per_rank("num_heads", "num_heads", tp, "--tp", false);
  per_rank("num_kv_heads", "num_kv_heads", tp, "--tp", true);
  per_rank("ffn_width", "ffn_width", tp, "--tp", false);
  // A gated delta net splits its heads over tensor parallelism like attention.
  per_rank("linear_num_key_heads", "linear_num_key_heads", tp, "--tp", true);
  per_rank("linear_num_value_heads", "linear_num_value_heads", tp, "--tp", true);
  if (auto it = totals.find("expert_num"); it != totals.end()) facts.set("expert_num", it->second.first, it->second.second);
  per_rank("local_expert_num", "expert_num", ep, "--ep", false);
  return out;
}

}  // namespace npufuse::plan
