"""Operators in the catalog whose semantics this reference does not model.

They exist with their torch_npu prototypes so that code calling them on CPU fails
with a clear NotImplementedError instead of an AttributeError, and so that the
signature test still checks their prototypes.
"""
from ._common import unsupported


def npu_moe_update_expert(expert_ids, eplb_table, *, expert_scales=None, pruning_threshold=None,
                          active_mask=None, local_rank_id=-1, world_size=-1, balance_mode=0):
    raise unsupported("npu_moe_update_expert", "redundant-expert load balancing (deployment layer)")


def npu_top_k_top_p_sample(logits, top_k, top_p, q=None, eps=1e-8, is_need_logits=False,
                           top_k_guess=32, min_ps=None, ks_max=1024, input_is_logits=True,
                           post_sample='qSample', generator=None):
    raise unsupported("npu_top_k_top_p_sample", "sampling (random draws are not reproducible)")
