#pragma once
// SSA dataflow of one Python function (a module's forward or a helper), the
// start of the graph that fusion rules will match on.
//
// Every expression that produces a value becomes an op with a canonical name
// (op_names.h), so `x.pow(2)`, `x ** 2`, `torch.pow(x, 2)` and
// `torch.square(x)` are all `pow`. Each assignment makes a new value (SSA);
// names assigned in an `if` or a loop are merged with a `phi` op after it.
// Casts (`.float()`, `.to(dtype)`, `type_as`) and views (`view`, `reshape`,
// `transpose`, slices, ...) are kept as ops and marked, so a matcher can see
// through them. build_dataflow keeps calls of submodules and helpers as
// single ops (`self.q_proj`, `call:rotate_half`); build_inlined_forward
// splices their bodies in. A local that holds a function
// (`attention_interface = eager_attention_forward`, or an entry of a dispatch
// table) is followed: every function it may hold is inlined under the
// condition that binds it and the results meet in a phi; a target not known
// statically stays an opaque call marked unresolved.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "model/init_attributes.h"
#include "model/source_set.h"

namespace npufuse::model {

enum class OpClass {
  Input,      // a function parameter
  Constant,   // a literal
  Compute,    // arithmetic / torch op
  Cast,       // dtype change only
  View,       // shape/stride change only (view, reshape, transpose, permute, ...)
  Slice,      // indexing x[...]
  Module,     // self.submodule(...)
  Call,       // a helper, an own method or an unknown callee (kept opaque)
  Attribute,  // self.weight, x.shape, x.dtype, other attribute reads
  Structure,  // tuple/list building, unpacking, phi merges, stores
};

const char* op_class_name(OpClass c);

// The third attr of an `unsqueeze` written as an index after an Ellipsis
// (`x[..., None]`): its axis is counted from the back of a tensor of unknown
// rank.
inline constexpr const char* kAfterEllipsis = "...";

struct DataflowOp {
  int id = 0;
  std::string name;          // canonical: "pow", "to", "view", "getitem", "module:q_proj", "phi", ...
  OpClass cls = OpClass::Compute;
  std::vector<int> inputs;   // value ids, in argument order (receiver first for methods)
  std::vector<std::string> attrs;  // keyword names bound to inputs ("dim="), literal text
  std::vector<int> outputs;  // value ids
  bool in_place = false;     // x.add_(y), x += y, x[i] = y
  int line = 0;
  int end_line = 0;
  // Where the expression that produced the op is: its file (an inlined helper
  // may live in another file than the function being built) and its byte
  // range in that file's source, for spans and byte-range patches.
  const ModelFile* file = nullptr;
  uint32_t begin = 0;
  uint32_t end = 0;
  std::string condition;     // enclosing if-conditions and loops, "" at top level
  // The `self` the op's code sees in an inlined forward: "self" for the
  // class's own code, "self.self_attn" inside an inlined submodule forward,
  // so an op can be told apart by the module whose code emitted it.
  std::string scope = "self";
  // In a graph built with module-list loops unrolled: which copy of the loop
  // body (1 or 2) emitted the op; 0 for every op outside such a body.
  int unrolled = 0;
  // A call whose target is not known statically (a dispatch table that is
  // imported, or keyed by a value no config gives): kept opaque, and why.
  bool unresolved = false;
  std::string unresolved_reason;
};

struct DataflowValue {
  int id = 0;
  std::string name;  // the variable it was bound to, if any
  int producer = -1;  // op id
};

struct FunctionDataflow {
  std::string function;
  const ModelFile* file = nullptr;
  std::vector<DataflowOp> ops;
  std::vector<DataflowValue> values;
  std::vector<int> returns;  // value ids returned (each return statement's values)

  // Ops that read value `v`, each once, in op order.
  std::vector<int> consumers(int v) const;
  // consumers(v) for every value, by value id, worked out in one pass.
  std::vector<std::vector<int>> consumers_by_value() const;
  const DataflowOp& producer_of(int v) const { return ops[static_cast<size_t>(values[static_cast<size_t>(v)].producer)]; }
  // Ops whose callee could not be resolved statically.
  std::vector<int> unresolved_calls() const;
  // One line per op: "v3 = pow(v1, v2) [compute] @12".
  std::string dump() const;
};

FunctionDataflow build_dataflow(const SourceSet& sources, const ModelFile& file, const ast::FunctionDef& fn);

// The clauses of an op's `condition`: the enclosing conditions the builder
// joins with " and ", split at top level only ("not (a and b)" is one clause).
std::vector<std::string> condition_clauses(const std::string& condition);

// What `self.<attribute>` of a class is: the constructor its __init__ uses.
class SubmoduleLookup {
 public:
  virtual ~SubmoduleLookup() = default;
  virtual const ModuleCtor* find(const ClassDecl& owner, std::string_view attribute) const = 0;
  // For a function-valued attribute picked from a table (`ACT2FN[config.hidden_act]`):
  // the op it computes ("silu"), "activation[<key>]" when the key is not known,
  // empty when the attribute is not such a callable.
  virtual std::string callable_op(const ClassDecl& owner, std::string_view attribute) const { return {}; }
  // A config field by key, for keys of dispatch tables (`self.config._attn_implementation`);
  // null when absent or when no config is loaded.
  virtual const nlohmann::json* config_field(std::string_view key) const { return nullptr; }
  // Whether `self.<attribute>` is an nn.Parameter (or buffer) of the class: inside a
  // module-list element such a read is one slice of the experts' stacked tensor.
  virtual bool is_parameter(const ClassDecl& owner, std::string_view attribute) const { return false; }
  // Whether `ctor` builds a decoder layer (a block of the model), whose
  // loop a builder asked to may unroll.
  virtual bool builds_block(const ModuleCtor& ctor) const { return false; }
  // A submodule built one of several ways under conditions the config does
  // not decide (`self.ffn = MLP(...) if dense else MoE(...)`): each way with
  // the condition it is built under. Empty when it is built one way only.
  struct Alternative {
    const ModuleCtor* ctor = nullptr;
    std::string condition;
  };
  virtual std::vector<Alternative> alternatives(const ClassDecl& owner, std::string_view attribute) const { return {}; }
};

// A class's forward with own methods, module-level helpers and local
// submodules' forwards inlined on demand (up to `max_depth` nested calls);
// known layers (nn.Linear, nn.LayerNorm, activations) become their canonical
// op reading `<path>.weight`. Attribute reads carry the submodule path
// (`self.self_attn.q_norm.weight`). Recursion and unknown callees stay calls.
//
// With `unroll_module_loops`, a loop of the class's own forward over a
// module list of decoder layers (`for layer in self.layers: h = layer(h)`;
// SubmoduleLookup::builds_block) inlines the layer's forward, and its body is walked twice: the second copy reads
// what the first wrote, so a chain across two elements (one decoder layer's
// residual add into the next one's input norm) is one dataflow. Each op
// records its copy in DataflowOp::unrolled. A submodule built one of several
// ways under conditions the config does not decide (SubmoduleLookup::
// alternatives) is then inlined each way, merged by a phi.
FunctionDataflow build_inlined_forward(const SourceSet& sources, const ClassDecl& cls, const SubmoduleLookup& lookup,
                                       int max_depth = 8, bool unroll_module_loops = false);

}  // namespace npufuse::model
