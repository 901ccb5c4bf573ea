#pragma once
// The model's instance tree from its top-level class down: every submodule
// with the arguments its parent passed, so sizes are resolved where the
// module is built (`Expert(args.dim, args.moe_inter_dim)` gives the expert's
// linears their real in/out), and the pipeline read off the tree:
// embedding -> blocks -> final norm -> LM head.
#include <optional>
#include <string>
#include <vector>

#include "model/module_roles.h"

namespace npufuse::model {

struct ModuleNode {
  std::string path;        // "model.layers[*].self_attn.q_proj"
  std::string attribute;   // "q_proj"
  std::string class_name;  // local class name, or the qualified known layer
  bool local = false;
  ModuleRole role = ModuleRole::Unknown;
  std::string position;    // where it sits in its parent's forward ("final norm", ...)
  AttributeKind kind = AttributeKind::Submodule;
  SourceSpan where;        // where the parent builds it
  SourceSpan class_where;  // the class definition (local classes)
  std::string condition;
  std::optional<bool> active;
  SymValue count;          // module lists: number of elements
  std::string element_condition;
  std::vector<SizeValue> sizes;  // layer sizes (in/out, num/dim, shape)
  std::string note;
  std::vector<ModuleNode> children;
};

struct PipelinePart {
  const ModuleNode* node = nullptr;
  std::string path() const { return node ? node->path : std::string(); }
};

struct ModelStructure {
  std::optional<ModuleNode> root;
  std::vector<std::string> other_roots;   // other top-level module classes
  PipelinePart embedding, blocks, final_norm, lm_head;
  // The same list of layers built from other classes where a per-layer key
  // picks each layer's class (`TYPES[config.layers_block_type[i]]`): Jamba's
  // attention and Mamba layers. `blocks` is the first of them.
  std::vector<const ModuleNode*> other_block_classes;
  std::vector<std::string> notes;        // what could not be found, said plainly
};

ModelStructure build_structure(const SourceSet& sources, Evaluator& ev, const RoleTable& roles);

}  // namespace npufuse::model
