#include "plan/fact_flags.h"

#include <map>

namespace npufuse::plan {

FactFlag fact_flag(const std::string& fact) {
  // The flags of `npufuse analyze` (cli/cmd_analyze.cc) and the per-rank facts
  // plan/deployment_facts derives from them.
  static const std::map<std::string, FactFlag> flags = {
      {"quant", {"--quant", "--quant bf16|w8a8|w8a8c8|w4a16", "--quant w8a8"}},
      {"ep", {"--ep", "--ep N", "--ep 8"}},
      {"tp", {"--tp", "--tp N", "--tp 2"}},
      {"dp", {"--dp", "--dp N", "--dp 2"}},
      {"chip", {"--chip", "--chip A2|A3|...", "--chip A2"}},
      {"stage", {"--stage", "--stage prefill|decode", "--stage decode"}},
      {"torch_npu_version", {"--torch-npu-version", "--torch-npu-version V", "--torch-npu-version 2.5.1"}},
      {"num_heads", {"--tp", "--tp N", "--tp 2"}},
      {"num_kv_heads", {"--tp", "--tp N", "--tp 2"}},
      {"linear_num_key_heads", {"--tp", "--tp N", "--tp 2"}},
      {"linear_num_value_heads", {"--tp", "--tp N", "--tp 2"}},
      {"local_expert_num", {"--ep", "--ep N", "--ep 8"}},
  };
  auto it = flags.find(fact);
  return it == flags.end() ? FactFlag{} : it->second;
}

}  // namespace npufuse::plan
