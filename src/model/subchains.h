#pragma once
// The sub-chains of each block, read from its inlined forward (workflow step
// 1, "decompose to replaceable chains"): for an attention module norm -> QKV
// projection -> RoPE -> cache write/read -> core -> O projection (with the
// MLA steps where the model has them), for a MoE module norm -> gate -> top-k
// -> dispatch -> experts -> combine -> shared expert, for a dense FFN norm ->
// gate/up -> activation -> down. Each step is found from ops and how values
// connect; names (`q_proj`, `gate`) are never the evidence. A step that
// cannot be found is listed as missing, not guessed.
#include <string>
#include <vector>

#include "model/dataflow.h"
#include "model/source_set.h"

namespace npufuse::model {

// Step kinds, by module:
//   attention: input_norm, qkv_projection, qk_norm, rope, cache_write, cache_read,
//              repeat_kv, attention_core, o_projection, residual_add
//   mla:       q_down, q_norm, q_up, kv_down, kv_norm, nope_rope_split, rope,
//              absorb_uk, cache_write, cache_read, attention_core, absorb_uv, o_projection
//   indexer:   index_q, index_k, index_norm, index_rope, index_weights, index_score, index_topk
//   moe:       post_norm, gate, topk, renorm, dispatch, experts, combine, shared_expert
//   ffn:       post_norm, gate_up_projection, activation, down_projection
struct SubChainStep {
  std::string kind;
  std::vector<SourceSpan> spans;  // file:line ranges of the step's ops
  std::vector<int> ops;           // op ids in the block graph
  std::string stages = "both";    // both | prefill | decode (a step only one branch runs)
  std::string detail;             // what was seen ("torch.cat growth", "softmax(QK^T*scale+mask)V", "sigmoid + bias")
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
};

struct BlockChains {
  std::string block_class;  // the decoder layer class
  std::string instance;     // "model.layers[*]"
  std::vector<ModuleChain> modules;
};

}  // namespace npufuse::model
