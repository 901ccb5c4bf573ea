"""Operators in the catalog whose semantics this reference does not model.

They exist with their torch_npu prototypes so that code calling them on CPU fails
with a clear NotImplementedError instead of an AttributeError, and so that the
signature test still checks their prototypes.
"""
from ._common import unsupported


def npu_kv_quant_sparse_flash_attention(query, key, value, sparse_indices, scale_value,
                                        key_quant_mode, value_quant_mode, *,
                                        key_dequant_scale=None, value_dequant_scale=None,
                                        block_table=None, actual_seq_lengths_query=None,
                                        actual_seq_lengths_kv=None, sparse_block_size=1,
                                        layout_query="BSND", layout_kv="BSND", sparse_mode=3,
                                        pre_tokens=2**63-1, next_tokens=2**63-1, attention_mode=0,
                                        quant_scale_repo_mode=1, tile_size=128, rope_head_dim=64):
    raise unsupported("npu_kv_quant_sparse_flash_attention",
                      "the combined int8 nope / rope / per-tile-scale cache rows (D = 656)")


def npu_moe_update_expert(expert_ids, eplb_table, *, expert_scales=None, pruning_threshold=None,
                          active_mask=None, local_rank_id=-1, world_size=-1, balance_mode=0):
    raise unsupported("npu_moe_update_expert", "redundant-expert load balancing (deployment layer)")


def npu_top_k_top_p_sample(logits, top_k, top_p, q=None, eps=1e-8, is_need_logits=False,
                           top_k_guess=32, min_ps=None, ks_max=1024, input_is_logits=True,
                           post_sample='qSample', generator=None):
    raise unsupported("npu_top_k_top_p_sample", "sampling (random draws are not reproducible)")
