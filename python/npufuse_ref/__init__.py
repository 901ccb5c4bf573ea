"""CPU reference semantics of the torch_npu fused operators npufuse can emit.

Each function mirrors the torch_npu prototype (names, order, keyword-only markers,
defaults), computes in float32 and returns the dtype the device returns. Inputs that
break a documented hard constraint raise ConstraintError (a ValueError); documented
modes this reference does not model raise NotImplementedError.

`OPS` maps every torch_npu attribute name to its reference function; the stand-in
`torch_npu` package (see standin.py) exposes exactly these.
"""
from . import (attention, ffn, kv_cache, linear_attention, matmul, mla, moe, norm, quant, rope, sampling,
               sparse, unmodelled)
from ._common import ConstraintError

_FAMILIES = {
    norm: ["npu_rms_norm", "npu_gemma_rms_norm", "npu_add_rms_norm", "npu_add_rms_norm_cast",
           "npu_add_rms_norm_quant", "npu_add_rms_norm_dynamic_quant", "npu_rms_norm_quant",
           "npu_layer_norm_eval"],
    rope: ["npu_rotary_mul", "npu_apply_rotary_pos_emb", "npu_interleave_rope", "npu_mrope"],
    attention: ["npu_fused_infer_attention_score", "npu_fused_infer_attention_score_v2",
                "npu_prompt_flash_attention", "npu_incre_flash_attention",
                "npu_fusion_attention", "npu_scaled_masked_softmax"],
    linear_attention: ["npu_chunk_gated_delta_rule", "npu_recurrent_gated_delta_rule", "npu_masked_causal_conv1d"],
    sparse: ["npu_sparse_flash_attention", "npu_lightning_indexer", "npu_quant_lightning_indexer",
             "npu_kv_quant_sparse_flash_attention"],
    mla: ["npu_kv_rmsnorm_rope_cache", "npu_kv_rmsnorm_rope_cache_v2", "npu_mla_prolog",
          "npu_mla_prolog_v2", "npu_mla_prolog_v3"],
    kv_cache: ["scatter_update_", "scatter_update", "npu_scatter_nd_update_",
               "npu_scatter_nd_update", "npu_scatter_pa_kv_cache"],
    moe: list(moe.__all__),
    ffn: ["npu_swiglu", "npu_swiglu_quant", "npu_dequant_swiglu_quant", "npu_clipped_swiglu",
          "npu_gelu", "npu_fast_gelu", "fast_gelu", "npu_silu", "npu_gelu_mul", "npu_ffn"],
    quant: ["npu_dynamic_quant", "npu_dynamic_quant_asymmetric", "npu_quant_matmul",
            "npu_weight_quant_batchmatmul", "npu_trans_quant_param", "npu_anti_quant",
            "npu_quantize", "npu_group_quant", "npu_dynamic_block_quant", "npu_quant_matmul_gelu"],
    sampling: ["npu_top_k_top_p"],
    unmodelled: ["npu_moe_update_expert", "npu_top_k_top_p_sample"],
    matmul: ["npu_transpose_batchmatmul", "npu_format_cast", "npu_format_cast_",
             "get_npu_format"],
}

OPS = {name: getattr(module, name) for module, names in _FAMILIES.items() for name in names}
FAMILY_OF = {name: module.__name__.rsplit(".", 1)[-1]
             for module, names in _FAMILIES.items() for name in names}

globals().update(OPS)

__all__ = ["OPS", "FAMILY_OF", "ConstraintError"] + sorted(OPS)
