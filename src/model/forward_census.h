#pragma once
// What a module's forward does, as a bag of facts rather than a graph: which
// canonical ops it uses (through the module-level helpers and own methods it
// calls), which submodules it calls and in what order. This is enough to
// tell a norm from a linear or an attention from an MLP; the SSA dataflow
// comes later and refines it.
#include <set>
#include <string>
#include <vector>

#include "model/dispatch_table.h"
#include "model/source_set.h"

namespace npufuse::model {

struct ForwardCensus {
  bool has_forward = false;
  std::set<std::string> ops;               // canonical op names
  std::vector<std::string> child_calls;    // self.X(...) / for-loops over self.X, in source order
  std::set<std::string> helpers;           // module-level functions reached
  std::set<std::string> dispatch_tables;   // NAME[...] looked up and called (ALL_ATTENTION_FUNCTIONS)
  // Lookups whose target is not known statically: "NAME[key]: why".
  std::vector<std::string> unresolved_dispatch;
  bool weight_plus_one = false;            // (1 + self.weight): Gemma-style norm weight
  bool subtracts_mean = false;             // x - x.mean(...): LayerNorm centring
  const ast::FunctionDef* forward = nullptr;
  const ModelFile* file = nullptr;
};

// The method `name` of a class or of its local bases, nearest first.
const ast::FunctionDef* find_method(const SourceSet& sources, const ClassDecl& cls, std::string_view name,
                                    const ClassDecl** owner = nullptr);

// `Fn.apply` where Fn is a local torch.autograd.Function: its static forward
// (called with ctx first), and the file it is in; null otherwise.
const ast::FunctionDef* autograd_forward(const SourceSet& sources, const ast::expr* func,
                                         const ModelFile** file = nullptr);

// `config` answers dispatch-table keys read from the config (may be empty).
ForwardCensus census_forward(const SourceSet& sources, const ClassDecl& cls, const ConfigFieldReader& config = {});

}  // namespace npufuse::model
