#pragma once
// What a module's `__init__` builds: submodules (with the constructor
// arguments bound to the callee's parameters), ModuleList/ModuleDict of
// blocks or experts, nn.Parameter and register_buffer tensors with their
// shapes, and plain scalars such as `self.head_dim`. Each attribute keeps the
// condition it was assigned under and its file:line.
//
// Sizes are evaluated in the instance's scope: with the parameters the
// parent passed (or, for a class seen on its own, with its defaults and
// symbolic names for the rest), so the same class can read
// `dim -> 7168` in one place and `dim` in another.
#include <functional>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include "model/evaluator.h"
#include "model/module_kinds.h"

namespace npufuse::model {

enum class AttributeKind {
  Submodule,   // self.x = SomeModule(...)
  ModuleList,  // nn.ModuleList([...]) / nn.Sequential(...)
  ModuleDict,  // nn.ModuleDict({...})
  Parameter,   // nn.Parameter(...) / register_parameter
  Buffer,      // register_buffer
  Scalar,      // a plain value (sizes, flags, eps)
  Config,      // the config object kept on self
  Callable,    // a function-valued attribute (ACT2FN[...], a dispatch entry)
  Other,
};

const char* attribute_kind_name(AttributeKind k);

// One evaluated size or value, with the text it was written as.
struct SizeValue {
  std::string label;    // "in", "out", "num", "dim", "shape[0]", "value", ...
  std::string written;  // source text
  SymValue value;
};

// A constructor call that builds a module.
struct ModuleCtor {
  std::string written;    // callee as written: "nn.Linear", "LlamaRMSNorm"
  std::string qualified;  // "torch.nn.Linear", or the local class name
  const ClassDecl* local = nullptr;
  const ast::Call* call = nullptr;
  std::map<std::string, SymValue, std::less<>> bindings;  // callee __init__ parameters (local classes)
};

struct Attribute {
  std::string name;
  AttributeKind kind = AttributeKind::Other;
  SourceSpan where;
  std::string condition;      // guard it was assigned under ("" = always)
  std::optional<bool> active;  // the guard's truth when the config decides it
  ModuleCtor module;           // Submodule, or the element of a ModuleList/ModuleDict
  std::string container;       // ModuleList/ModuleDict: the container as written ("nn.ModuleList")
  SymValue count;              // ModuleList / ModuleDict length
  std::string element_condition;  // `X if cond else None` inside the list
  std::vector<SizeValue> sizes;
  std::string note;             // persistent=False, bias, the activation name, ...
  bool inherited = false;       // set by a local base class's __init__
};

struct ClassInstance {
  const ClassDecl* cls = nullptr;
  const ast::FunctionDef* init = nullptr;  // null when neither it nor a local base has one
  std::vector<Attribute> attributes;
  EvalScope scope;  // the evaluated __init__ scope (parameters, locals, self.X)
};

// Sizes of a known layer (nn.Linear, QKVParallelLinear, ...) from its
// constructor arguments; empty for other classes.
std::vector<SizeValue> known_layer_sizes(const ModuleCtor& ctor, const ModelFile& file, Evaluator& ev, EvalScope& scope);

// Binds a call's arguments to a function's parameters, evaluated in the
// caller's scope; unbound parameters take their defaults, or a symbol named
// after the parameter (the config object for config-like parameters).
std::map<std::string, SymValue, std::less<>> bind_arguments(const ast::FunctionDef* fn, const ModelFile& callee_file,
                                                             const ast::Call* call, const ModelFile* caller_file,
                                                             Evaluator& ev, EvalScope* caller_scope,
                                                             bool skip_self = true);

// Describes a class's __init__ for one instance. `bindings` null: the class
// on its own (defaults and symbols).
// `per_layer` (standalone descriptions only): parameters some constructor
// call sets per layer (`layer_type=config.layers_block_type[i]`), left unknown
// instead of taking their default, so neither arm they choose is dropped.
ClassInstance describe_instance(const SourceSet& sources, Evaluator& ev, const ClassDecl& cls,
                                const std::map<std::string, SymValue, std::less<>>* bindings,
                                const std::set<std::string>* per_layer = nullptr);

// For each local class, the __init__ parameters some call in the analysed
// files passes one element of a config list (`config.layer_types[i]`,
// `self.config.X[layer_idx]`) by a non-literal index.
std::map<std::string, std::set<std::string>> per_layer_parameters(const SourceSet& sources);

}  // namespace npufuse::model
