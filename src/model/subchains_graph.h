#pragma once
// Reachability and tracing over one inlined block forward, shared by the
// sub-chain finders (subchains_*.cc). Ops are emitted in evaluation order,
// so "downstream" and "upstream" are one pass each over the op list.
#include <set>
#include <string>
#include <vector>

#include "model/subchains.h"

namespace npufuse::model::subchains {

using OpSet = std::vector<char>;  // indexed by op id

struct BlockGraph {
  const FunctionDataflow& g;
  const std::vector<BranchCondition>& branches;
  const CacheOrganisation& kv_cache;

  size_t size() const { return g.ops.size(); }
  const DataflowOp& op(int id) const { return g.ops[static_cast<size_t>(id)]; }
  const DataflowOp& producer(int value) const { return g.producer_of(value); }

  // Ops that read (transitively) an output of an op in `from`; `from` excluded.
  OpSet downstream(const OpSet& from) const;
  OpSet downstream_of_values(const std::vector<int>& values) const;
  // Ops whose outputs reach (transitively) an input of an op in `to`; `to` excluded.
  OpSet upstream(const OpSet& to) const;
  // Producers of `values` following data only: a view's or slice's base, not
  // its shape or index arguments; the producers of `values` included.
  OpSet data_upstream(const std::vector<int>& values) const;

  // The op that made `value`, looking through views, casts, unpacking and
  // phis of one input (the first input for a phi).
  const DataflowOp& source(int value) const;
  // The attribute path a weight operand is read from ("self.mlp.gate.weight"),
  // or "" when it is computed (a dequantised weight).
  std::string weight_path(int value) const;
  // The dotted path an attribute op reads ("self.attn.kv_b_proj.weight"), "" for other ops.
  std::string attribute_path(const DataflowOp& o) const;
  // Whether `value` is computed from a `*.weight` attribute without passing
  // through a linear, matmul or einsum (a weight slice used as an operand).
  bool reads_weight_directly(int value) const;
  // The cache object an op writes into or reads from: "attr:<path>" or "v<id>".
  std::string root_key(int value) const;
  // Source text of an op, first line only.
  std::string text(const DataflowOp& o) const;
  // g.consumers(value), from an index of every value's readers built on first use.
  const std::vector<int>& consumers(int value) const;

  mutable std::vector<std::vector<int>> readers_ = {};  // by value id; empty until consumers() is asked
};

OpSet make_set(size_t n);
OpSet set_of(size_t n, const std::vector<int>& ids);
OpSet intersect(const OpSet& a, const OpSet& b);
std::vector<int> members(const OpSet& s);
bool any(const OpSet& s);

bool in_scope(const DataflowOp& o, const std::string& scope);
bool is_matmul(const DataflowOp& o);  // matmul / bmm / einsum
bool is_linear(const DataflowOp& o);      // F.linear, nn.Linear, HF's Conv1D
bool is_activation(const DataflowOp& o);  // silu, gelu, relu, tanh, sigmoid, ... and ACT2FN picks
bool is_norm_anchor(const DataflowOp& o);  // rsqrt, rms_norm, layer_norm

// A projection: the linear ops of one weight (the dequantising and the plain
// GEMM of one layer are one projection).
struct Projection {
  std::string key;  // weight path without ".weight", or the scope that computes it
  std::vector<int> ops;
};
std::vector<Projection> projections(const BlockGraph& bg, const std::vector<int>& linear_ops);

// A norm found in a module: the ops of a norm submodule's forward, or of an
// inline rsqrt / rms_norm computation.
struct Norm {
  std::string key;
  std::vector<int> ops;
  int anchor = -1;  // the rsqrt / rms_norm op
};
std::vector<Norm> norms_in(const BlockGraph& bg, const std::vector<int>& candidate_ops);

// The stage ("prefill"/"decode"/"") and the attention-dispatch arm ("" when
// none) an op runs in.
std::pair<std::string, std::string> arm_of(const BlockGraph& bg, const DataflowOp& o);

// A step built from ops: spans, stage and variant, split by branch arm.
std::vector<SubChainStep> make_steps(const BlockGraph& bg, const std::string& kind, const std::vector<int>& ops,
                                     const std::string& detail);
// make_steps appended to `chain`; nothing when `ops` is empty.
void add_steps(ModuleChain& chain, const BlockGraph& bg, const std::string& kind, const std::vector<int>& ops,
               const std::string& detail);

// The module finders: each appends its steps to `chain` (in dataflow order
// after sorting) and fills `missing`; `ops` are the ops of the module's scope.
void find_attention_steps(const BlockGraph& bg, const std::string& scope, const std::vector<int>& ops, ModuleChain& chain);
void find_moe_steps(const BlockGraph& bg, const std::string& scope, const std::vector<int>& ops, ModuleChain& chain);
void find_ffn_steps(const BlockGraph& bg, const std::string& scope, const std::vector<int>& ops, ModuleChain& chain);
void find_indexer_steps(const BlockGraph& bg, const std::string& scope, const std::vector<int>& ops, ModuleChain& chain);
// A module in an attention's place that runs a conv1d and no softmax over
// scores (a linear-attention or state-space mixer), and its steps: `conv1d`
// and `recurrence` (detail: gated delta rule, Kimi delta attention, selective
// state-space scan; none for a short convolution gated by products).
bool is_linear_mixer(const BlockGraph& bg, const std::vector<int>& ops);
void find_linear_mixer_steps(const BlockGraph& bg, const std::string& scope, const std::vector<int>& ops,
                             ModuleChain& chain);
CoreLayout find_core_layout(const BlockGraph& bg, const std::vector<int>& core_ops);
// Values of the chain's steps read outside the block's steps: `module_ops`
// are the ops of the module's scope, `block_step_ops` the ops of every step of
// every chain of the block.
void find_escapes(const BlockGraph& bg, const std::vector<int>& module_ops, const OpSet& block_step_ops, ModuleChain& chain);

}  // namespace npufuse::model::subchains
