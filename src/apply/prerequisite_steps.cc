#include "apply/prerequisite_steps.h"

namespace npufuse::apply {

PrerequisiteHandling handling_of(const plan::PrerequisiteItem& p) {
  if (p.id == "merge_gate_up") return {PrerequisiteWay::MergeGateUp, ""};
  if (p.id == "stack_expert_weights") return {PrerequisiteWay::StackExperts, ""};
  // experts_grouped_matmul's replacement casts the router's ids itself.
  if (p.id == "int32_expert_ids") return {PrerequisiteWay::ByTheRewrite, "the replacement casts the expert ids to int32"};
  // add_rms_norm's: when the add and the norm are rewritten together in one
  // function, the operator's third output is assigned to the name the sum
  // was bound to, which is what the later residual add reads; that run
  // always has its add, so no first-layer special case arises. A chain
  // across the layer loop is done by apply/thread_residual, whose layer
  // takes the pending residual (None for the first layer, which keeps its
  // plain norm).
  if (p.id == "thread_residual" || p.id == "first_layer_plain_norm")
    return {PrerequisiteWay::ByTheRewrite,
            "the residual sum is assigned the operator's third output; across the layer loop, the layers pass the pending "
            "residual on"};
  if (p.id == "causal_mask_2048") return {PrerequisiteWay::ModuleBuffer, ""};
  // rope_cos_sin_precompute's replacement: the tables are built once in the
  // rotary class's __init__ (RULE["apply"]["built_once"]), and each call
  // selects its positions' rows.
  if (p.id == "rope_cos_sin_cache") return {PrerequisiteWay::ModuleBuffer, ""};
  // rope_interleave_complex's replacement turns freqs_cis into the real
  // tables itself, on every call: the numbers are the operator's either way,
  // and building the tables once with the rotary cache only saves that work.
  if (p.id == "real_cos_sin_tables")
    return {PrerequisiteWay::ByTheRewrite,
            "the replacement builds the real cos/sin tables from freqs_cis on each call; building them once with the rotary "
            "cache is a further speed-up, by hand"};
  // cache_update_scatter's replacement derives the start per batch row from
  // the positions the write was given (their first one, repeated): the chain
  // it matched writes at consecutive positions from one start, so the numbers
  // are the original's. A kv_len the decode loop keeps per sequence (batches
  // of different lengths) is a change of how the model is run, by hand.
  if (p.id == "kv_len_tensor")
    return {PrerequisiteWay::ByTheRewrite,
            "the replacement takes kv_len from the write's own positions (the first one per batch row); a kv_len kept per "
            "sequence by the decode loop is a further step, by hand"};
  // v_absorb_transpose_bmm's replacement transposes W_UV to [heads,
  // kv_lora_rank, v_head_dim] on each call: the operator gets the layout it
  // needs and the numbers are the same; keeping the transposed weight from
  // load time (W_UV is a slice of a loaded parameter, so a table built in
  // __init__ would go stale) only saves that copy, by hand.
  if (p.id == "pretranspose_w_uv")
    return {PrerequisiteWay::ByTheRewrite,
            "the replacement transposes W_UV on each call; keeping it transposed from load time is a further speed-up, by "
            "hand"};
  // sparse_flash_attention's replacement passes the chain's indices as int32
  // [b, s, 1, k]. The chain scatters them into its mask, so each lies in
  // [0, kv_len) (scatter_ refuses others) and none is -1; a row with fewer
  // keys than top-k holds positions past the causal limit, which the model's
  // mask takes out and sparse_mode=3 drops.
  if (p.id == "padded_topk_indices")
    return {PrerequisiteWay::ByTheRewrite,
            "the replacement passes the chain's own indices as int32 [b, s, 1, k]; the positions a short row's top-k takes "
            "past the causal limit are dropped by sparse_mode=3 as the model's mask drops them"};
  if (p.id.rfind("take_output_", 0) == 0)
    return {PrerequisiteWay::Manual, "the model reads a value the operator returns only when asked for it"};
  if (p.id.rfind("keep_intermediate", 0) == 0)
    return {PrerequisiteWay::Manual, "the model reads an intermediate the fused operator does not produce"};
  if (p.mechanical) return {PrerequisiteWay::Manual, "mechanical, but apply does not perform it yet"};
  return {PrerequisiteWay::Manual, "not mechanical: it changes how the model is run"};
}

}  // namespace npufuse::apply
