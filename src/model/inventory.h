#pragma once
// Workflow step 1, the model inventory: the module classes with their
// attributes and roles, the instance tree and pipeline, the config facts and
// the config fields the code reads, branch conditions, the KV cache, and the
// block's sub-chains with their layouts and escaping intermediates. The parts
// of step 1 not computed yet are listed by name in `not_computed`, so no
// output ever implies they were checked.
#include <memory>
#include <string>
#include <vector>

#include "model/branches.h"
#include "model/facts.h"
#include "model/kv_cache.h"
#include "model/module_roles.h"
#include "model/module_tree.h"
#include "model/subchains.h"

namespace npufuse::model {

struct ClassSummary {
  const ClassDecl* cls = nullptr;
  SourceSpan where;
  std::vector<std::string> bases;  // as written
  ClassRole role;
  std::vector<Attribute> attributes;  // the class on its own (defaults and symbols)
  std::vector<std::string> forward_ops;    // canonical ops its forward uses (through helpers)
  std::vector<std::string> forward_calls;  // submodules its forward calls, in order
};

struct ConfigFieldUse {
  std::string key;
  bool found = false;
  std::vector<SourceSpan> where;
};

struct Inventory {
  std::vector<std::string> files;
  std::string config_path;  // empty: no config given
  std::vector<ClassSummary> classes;
  ModelStructure structure;
  std::vector<Fact> facts;
  std::vector<ConfigFieldUse> config_fields;
  std::vector<BranchCondition> branches;
  CacheOrganisation kv_cache;
  std::vector<BlockChains> chains;  // per decoder-layer class
  // The roles the inventory was read with; the matcher reads the same.
  std::shared_ptr<const RoleTable> roles;
  std::vector<std::string> not_computed;
};

// `sources` and `config` must outlive the inventory (it points into them).
Inventory build_inventory(const SourceSet& sources, const ModelConfig& config);

// The inventory parts not computed yet, with what each one will hold.
const std::vector<std::pair<std::string, std::string>>& pending_inventory_parts();

}  // namespace npufuse::model
