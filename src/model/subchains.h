#pragma once
// The sub-chains of each block, read from its inlined forward (workflow step
// 1, "decompose to replaceable chains"): for an attention module norm -> QKV
// projection -> RoPE -> cache write/read -> core -> O projection (with the
// MLA steps where the model has them), for a MoE module norm -> gate -> top-k
// -> dispatch -> experts -> combine -> shared expert, for a dense FFN norm ->
// gate/up -> activation -> down. Each step is found from ops and how values
// connect; names (`q_proj`, `gate`) are never the evidence. A step that
// cannot be found is listed as missing, not guessed.
#include <memory>
#include <string>
#include <vector>

#include "model/branches.h"
#include "model/dataflow.h"
#include "model/kv_cache.h"
#include "model/module_tree.h"
#include "model/source_set.h"

namespace npufuse::model {

// Step kinds, by module:
//   attention: input_norm, qkv_projection, qk_norm, rope, cache_write, cache_read,
//              repeat_kv, attention_core, o_projection, residual_add
//   mla:       input_norm, q_down, q_norm, q_up, kv_down, kv_norm, nope_rope_split, rope,
//              kv_up (the naive path's latent up-projection), absorb_uk, cache_write,
//              cache_read, attention_core, absorb_uv, o_projection, residual_add
//   indexer:   index_q, index_k, index_norm, index_rope, index_weights, index_score, index_topk
//   moe:       post_norm, gate, topk, renorm, dispatch, experts, combine, shared_expert, residual_add
//   ffn:       post_norm, gate_up_projection, activation, down_projection, residual_add
struct SubChainStep {
  std::string kind;
  std::vector<SourceSpan> spans;  // file:line ranges of the step's ops
  std::vector<int> ops;           // op ids in the block graph
  std::string stages = "both";    // both | prefill | decode (a step only one branch runs)
  // The arm of a non-stage branch the step runs in (an attention-implementation
  // switch: `self.attn_impl == "naive"` or `not (self.attn_impl == "naive")`);
  // empty when it runs on every path. A step found in two arms is listed once per arm.
  std::string variant;
  std::string detail;             // what was seen ("torch.cat growth", "softmax(QK^T*scale+mask)V", "sigmoid + bias")
  // Residual adds only: the norm that reads the sum, through views, casts and
  // the block's return into the next layer's first norm: "rms_norm",
  // "layer_norm", "none" (no norm reads it: a post-norm block, a norm on the
  // branch before the add) or "" (not worked out).
  std::string sum_read_by;
};

struct IntermediateEscape {
  std::string step;      // the step whose value escapes
  std::string value;     // the variable name, or "v<id>"
  std::string how;       // "returned", "stored on self", "written to the cache", "passed to output_attentions", ...
  SourceSpan where;
};

// Tensor layout at the attention core, from the views before it.
struct CoreLayout {
  std::string layout = "unknown";  // BNSD | BSND | BSH | TND | unknown
  std::string evidence;            // "q.view(b, s, n, d).transpose(1, 2) at model.py:182"
};

struct ModuleChain {
  std::string module;       // attention | mla | indexer | moe | ffn
  std::string class_name;   // the class whose forward holds it
  std::string instance;     // instance path ("model.layers[*].self_attn")
  std::vector<SubChainStep> steps;    // in dataflow order
  std::vector<std::string> missing;   // expected step kinds not found
  std::vector<IntermediateEscape> escapes;
  CoreLayout layout;                  // attention / mla only
  // When the block builds this module under alternatives (`MLP(...) if dense
  // else MoE(...)`): the alternative analysed, as written with its guard. The
  // op ids of a non-default alternative refer to the block forward built with
  // that alternative, not to the default block graph.
  std::string alternative;
  bool default_graph = true;
};

struct BlockChains {
  std::string block_class;  // the decoder layer class
  std::string instance;     // "model.layers[*]"
  std::vector<ModuleChain> modules;
  // The block's forward with its submodules inlined, as the sub-chains were
  // read from it (the default alternatives): the matcher walks the same graph.
  std::shared_ptr<FunctionDataflow> forward;
};

// The sub-chains of the decoder-layer class (`structure.blocks`), from its
// forward with submodules inlined; `branches` classify the conditions that
// split steps by stage, `kv_cache` names the cache mechanisms. Empty when the
// model has no block class.
std::vector<BlockChains> find_subchains(const SourceSet& sources, const RoleTable& roles, const ModelStructure& structure,
                                        const SubmoduleLookup& lookup, const std::vector<BranchCondition>& branches,
                                        const CacheOrganisation& kv_cache);

}  // namespace npufuse::model
