#include "report/module_names.h"

#include <algorithm>

namespace npufuse::report {

namespace {
struct ModuleWords {
  const char* id;
  const char* en;
  const char* zh;
};
constexpr ModuleWords kModules[] = {
    {"attention", "Attention core", "Attention 核心"},
    {"kv_cache", "KV cache", "KV Cache"},
    {"rope", "RoPE", "RoPE"},
    {"norm", "Norm", "Norm"},
    {"ffn", "FFN", "FFN"},
    {"moe_gate", "MoE gate", "MoE 门控"},
    {"moe_routing", "MoE routing", "MoE 路由"},
    {"moe_experts", "MoE experts", "MoE 专家计算"},
    {"mla", "MLA", "MLA"},
    {"indexer", "Indexer", "Indexer"},
    {"quant", "Quantisation", "量化"},
    {"other", "Other", "其他"},
};
}  // namespace

const std::vector<std::string>& module_order() {
  static const std::vector<std::string> order = [] {
    std::vector<std::string> v;
    for (const auto& m : kModules) v.push_back(m.id);
    return v;
  }();
  return order;
}

int module_rank(const std::string& module) {
  const auto& order = module_order();
  auto it = std::find(order.begin(), order.end(), module);
  return static_cast<int>(it - order.begin());
}

std::string module_title(const std::string& module, Lang lang) {
  for (const auto& m : kModules)
    if (module == m.id) return lang == Lang::Zh ? m.zh : m.en;
  return module;
}

}  // namespace npufuse::report
