#include "plan/moe_fact.h"

namespace npufuse::plan {

void add_moe_fact(const model::RoleTable& roles, const std::vector<model::BlockChains>* blocks, check::FactSet& facts) {
  if (facts.find("moe")) return;
  for (const model::ClassDecl* cls : roles.module_classes()) {
    std::string name(cls->node->name);
    if (const model::ClassRole* role = roles.find(name); role && role->role == model::ModuleRole::MoE) {
      facts.set("moe", true, "code: " + name + " routes to experts");
      return;
    }
  }
  if (blocks)
    for (const model::BlockChains& b : *blocks)
      for (const model::ModuleChain& m : b.modules)
        if (m.module == "moe") {
          facts.set("moe", true, "code: routed experts in " + (m.class_name.empty() ? b.block_class : m.class_name));
          return;
        }
  if (const check::Fact* experts = facts.find("expert_num"); experts && experts->value.is_int() && experts->value.as_int() > 0) {
    facts.set("moe", true, "derived: expert_num > 0 (" + experts->provenance + ")");
    return;
  }
  facts.set("moe", false, "code: no module routes to experts, and the config has no expert count");
}

}  // namespace npufuse::plan
