"""MoE family: routers, token permutation, grouped matmul, single-rank MC2 emulation."""
from .grouped_matmul import (npu_grouped_matmul, npu_grouped_matmul_finalize_routing,
                             npu_grouped_matmul_swiglu_quant_v2)
from .moe_distribute import (npu_moe_distribute_combine, npu_moe_distribute_combine_add_rms_norm,
                             npu_moe_distribute_combine_v2, npu_moe_distribute_dispatch,
                             npu_moe_distribute_dispatch_v2)
from .moe_gating import npu_moe_gating_top_k, npu_moe_gating_top_k_softmax
from .moe_routing import (npu_moe_compute_expert_tokens, npu_moe_finalize_routing,
                          npu_moe_init_routing, npu_moe_init_routing_v2, npu_moe_re_routing)

__all__ = [
    "npu_grouped_matmul", "npu_grouped_matmul_finalize_routing",
    "npu_grouped_matmul_swiglu_quant_v2", "npu_moe_distribute_combine",
    "npu_moe_distribute_combine_add_rms_norm", "npu_moe_distribute_combine_v2",
    "npu_moe_distribute_dispatch", "npu_moe_distribute_dispatch_v2",
    "npu_moe_gating_top_k", "npu_moe_gating_top_k_softmax", "npu_moe_compute_expert_tokens",
    "npu_moe_finalize_routing", "npu_moe_init_routing", "npu_moe_init_routing_v2",
    "npu_moe_re_routing",
]
