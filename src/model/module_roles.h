#pragma once
// Which classes are nn.Modules and what each one is. The role comes from
// what the class holds (parameters and their ranks, submodules and their
// roles, module lists) and what its forward computes (canonical ops); class
// and attribute names are never the evidence. Each role carries the
// evidence that decided it, so a reader can check it.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "model/dataflow.h"
#include "model/forward_census.h"
#include "model/init_attributes.h"
#include "model/model_config.h"
#include "model/module_kinds.h"

namespace npufuse::model {

struct ClassRole {
  ModuleRole role = ModuleRole::Unknown;
  std::vector<std::string> evidence;
  bool weight_offset_one = false;  // norm scales by (1 + weight)
};

class RoleTable {
 public:
  // Infers the role of every nn.Module class in `sources`.
  static RoleTable infer(const SourceSet& sources, Evaluator& ev);

  bool is_module(std::string_view local_class) const;
  const ClassRole* find(std::string_view local_class) const;
  // The role of what a constructor builds: a local class's inferred role or a
  // known layer's role.
  ModuleRole role_of(const ModuleCtor& ctor) const;
  const ClassInstance* standalone(std::string_view local_class) const;
  const ForwardCensus* census(std::string_view local_class) const;
  // Module classes in source order.
  const std::vector<const ClassDecl*>& module_classes() const { return module_classes_; }

 private:
  ClassRole classify(const ClassDecl& cls);
  ModuleRole resolve(const std::string& name);

  const SourceSet* sources_ = nullptr;
  std::vector<const ClassDecl*> module_classes_;
  std::map<std::string, ClassRole, std::less<>> roles_;
  std::map<std::string, ClassInstance, std::less<>> instances_;
  std::map<std::string, ForwardCensus, std::less<>> censuses_;
  std::set<std::string, std::less<>> in_progress_;
};

// Submodule constructors as the role table saw them, for dataflow inlining.
// When a class builds an attribute under alternatives, the first active one
// (or the first) is used.
// With a config, dispatch-table keys read from it (`self.config._attn_implementation`).
class RoleTableSubmodules : public SubmoduleLookup {
 public:
  explicit RoleTableSubmodules(const RoleTable& roles, const ModelConfig* config = nullptr)
      : roles_(roles), config_(config) {}
  const ModuleCtor* find(const ClassDecl& owner, std::string_view attribute) const override;
  std::string callable_op(const ClassDecl& owner, std::string_view attribute) const override;
  const nlohmann::json* config_field(std::string_view key) const override;
  bool is_parameter(const ClassDecl& owner, std::string_view attribute) const override;
  bool builds_block(const ModuleCtor& ctor) const override;
  std::vector<Alternative> alternatives(const ClassDecl& owner, std::string_view attribute) const override;

 private:
  const RoleTable& roles_;
  const ModelConfig* config_;
};

}  // namespace npufuse::model
