#pragma once
// The plan's module vocabulary (plan.h: Candidate::module) in workflow order,
// with the words people read for each.
#include <string>
#include <vector>

#include "report/plan_markdown.h"

namespace npufuse::report {

// attention, kv_cache, rope, norm, ffn, moe_gate, moe_routing, moe_experts, mla, indexer, quant, other
const std::vector<std::string>& module_order();
// Position in module_order(); unknown modules sort last, by name.
int module_rank(const std::string& module);
std::string module_title(const std::string& module, Lang lang);

}  // namespace npufuse::report
