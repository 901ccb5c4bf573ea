"""Fused attention front ends: FIA v1/v2, PromptFlashAttention, IncreFlashAttention.

Each function renames its arguments into an AttentionCall and runs the shared core.
Quantisation, KV fake-quantisation, left padding and shared prefixes are not modelled
and raise NotImplementedError.
"""
from ._common import unsupported
from .attention_core import AttentionCall, run_attention

_INT_MAX = 2147483647


def _reject(op, **named):
    for name, value in named.items():
        if value is not None:
            raise unsupported(op, f"{name} (quantisation, padding or prefix features)")


def npu_fused_infer_attention_score(
        query, key, value, *, pse_shift=None, atten_mask=None, actual_seq_lengths=None,
        actual_seq_lengths_kv=None, dequant_scale1=None, quant_scale1=None, dequant_scale2=None,
        quant_scale2=None, quant_offset2=None, antiquant_scale=None, antiquant_offset=None,
        block_table=None, query_padding_size=None, kv_padding_size=None, key_antiquant_scale=None,
        key_antiquant_offset=None, value_antiquant_scale=None, value_antiquant_offset=None,
        key_shared_prefix=None, value_shared_prefix=None, actual_shared_prefix_len=None,
        query_rope=None, key_rope=None, key_rope_antiquant_scale=None, num_heads=1, scale=1.0,
        pre_tokens=2147483647, next_tokens=2147483647, input_layout="BSH", num_key_value_heads=0,
        sparse_mode=0, inner_precise=0, block_size=0, antiquant_mode=0, softmax_lse_flag=False,
        key_antiquant_mode=0, value_antiquant_mode=0):
    """Returns (attention_out, softmax_lse)."""
    op = "npu_fused_infer_attention_score"
    _reject(op, dequant_scale1=dequant_scale1, quant_scale1=quant_scale1,
            dequant_scale2=dequant_scale2, quant_scale2=quant_scale2, quant_offset2=quant_offset2,
            antiquant_scale=antiquant_scale, antiquant_offset=antiquant_offset,
            query_padding_size=query_padding_size, kv_padding_size=kv_padding_size,
            key_antiquant_scale=key_antiquant_scale, key_antiquant_offset=key_antiquant_offset,
            value_antiquant_scale=value_antiquant_scale,
            value_antiquant_offset=value_antiquant_offset, key_shared_prefix=key_shared_prefix,
            value_shared_prefix=value_shared_prefix,
            actual_shared_prefix_len=actual_shared_prefix_len,
            key_rope_antiquant_scale=key_rope_antiquant_scale)
    call = AttentionCall(
        op=op, query=query, key=key, value=value, num_heads=num_heads,
        num_kv_heads=num_key_value_heads, scale=scale, input_layout=input_layout,
        sparse_mode=sparse_mode, pre_tokens=pre_tokens, next_tokens=next_tokens,
        atten_mask=atten_mask, pse_shift=pse_shift, actual_q=actual_seq_lengths,
        actual_kv=actual_seq_lengths_kv, block_table=block_table, block_size=block_size,
        query_rope=query_rope, key_rope=key_rope, want_lse=softmax_lse_flag)
    return run_attention(call)


def npu_fused_infer_attention_score_v2(
        query, key, value, *, query_rope=None, key_rope=None, pse_shift=None, atten_mask=None,
        actual_seq_qlen=None, actual_seq_kvlen=None, block_table=None, dequant_scale_query=None,
        dequant_scale_key=None, dequant_offset_key=None, dequant_scale_value=None,
        dequant_offset_value=None, dequant_scale_key_rope=None, quant_scale_out=None,
        quant_offset_out=None, quant_scale_p=None, learnable_sink=None, num_query_heads=1,
        num_key_value_heads=0, softmax_scale=1.0, pre_tokens=2147483647, next_tokens=2147483647,
        input_layout="BSH", sparse_mode=0, block_size=0, query_quant_mode=0, key_quant_mode=0,
        value_quant_mode=0, inner_precise=0, return_softmax_lse=False, query_dtype=None,
        key_dtype=None, value_dtype=None, query_rope_dtype=None, key_rope_dtype=None,
        key_shared_prefix_dtype=None, value_shared_prefix_dtype=None,
        dequant_scale_query_dtype=None, dequant_scale_key_dtype=None,
        dequant_scale_value_dtype=None, dequant_scale_key_rope_dtype=None, out_dtype=None):
    """Returns (attention_out, softmax_lse). Same maths as v1 with renamed parameters."""
    op = "npu_fused_infer_attention_score_v2"
    _reject(op, dequant_scale_query=dequant_scale_query, dequant_scale_key=dequant_scale_key,
            dequant_offset_key=dequant_offset_key, dequant_scale_value=dequant_scale_value,
            dequant_offset_value=dequant_offset_value,
            dequant_scale_key_rope=dequant_scale_key_rope, quant_scale_out=quant_scale_out,
            quant_offset_out=quant_offset_out, quant_scale_p=quant_scale_p)
    if sparse_mode == 9:
        raise unsupported(op, "sparse_mode 9 (tree mask for speculative decoding)")
    call = AttentionCall(
        op=op, query=query, key=key, value=value, num_heads=num_query_heads,
        num_kv_heads=num_key_value_heads, scale=softmax_scale, input_layout=input_layout,
        sparse_mode=sparse_mode, pre_tokens=pre_tokens, next_tokens=next_tokens,
        atten_mask=atten_mask, pse_shift=pse_shift, actual_q=actual_seq_qlen,
        actual_kv=actual_seq_kvlen, block_table=block_table, block_size=block_size,
        query_rope=query_rope, key_rope=key_rope, learnable_sink=learnable_sink,
        want_lse=return_softmax_lse)
    return run_attention(call)


def npu_prompt_flash_attention(
        query, key, value, *, pse_shift=None, padding_mask=None, atten_mask=None,
        actual_seq_lengths=None, deq_scale1=None, quant_scale1=None, deq_scale2=None,
        quant_scale2=None, quant_offset2=None, num_heads=1, scale_value=1.0,
        pre_tokens=2147483647, next_tokens=0, input_layout="BSH", num_key_value_heads=0,
        actual_seq_lengths_kv=None, sparse_mode=0):
    """Returns attention_out only. Note next_tokens defaults to 0 here."""
    op = "npu_prompt_flash_attention"
    _reject(op, padding_mask=padding_mask, deq_scale1=deq_scale1, quant_scale1=quant_scale1,
            deq_scale2=deq_scale2, quant_scale2=quant_scale2, quant_offset2=quant_offset2)
    call = AttentionCall(
        op=op, query=query, key=key, value=value, num_heads=num_heads,
        num_kv_heads=num_key_value_heads, scale=scale_value, input_layout=input_layout,
        sparse_mode=sparse_mode, pre_tokens=pre_tokens, next_tokens=next_tokens,
        atten_mask=atten_mask, pse_shift=pse_shift, actual_q=actual_seq_lengths,
        actual_kv=actual_seq_lengths_kv)
    return run_attention(call)[0]


def npu_incre_flash_attention(
        query, key, value, *, padding_mask=None, pse_shift=None, atten_mask=None,
        actual_seq_lengths=None, dequant_scale1=None, quant_scale1=None, dequant_scale2=None,
        quant_scale2=None, quant_offset2=None, antiquant_scale=None, antiquant_offset=None,
        block_table=None, kv_padding_size=None, num_heads=1, scale_value=1.0, input_layout="BSH",
        num_key_value_heads=0, block_size=0, inner_precise=1):
    """Single-token decode; actual_seq_lengths are the key/value lengths. Returns attention_out."""
    op = "npu_incre_flash_attention"
    _reject(op, padding_mask=padding_mask, dequant_scale1=dequant_scale1,
            quant_scale1=quant_scale1, dequant_scale2=dequant_scale2, quant_scale2=quant_scale2,
            quant_offset2=quant_offset2, antiquant_scale=antiquant_scale,
            antiquant_offset=antiquant_offset, kv_padding_size=kv_padding_size)
    q_seq = query.shape[2] if input_layout == "BNSD" else query.shape[1]
    if q_seq != 1:
        raise ValueError(f"{op}: constraint violated: query S must be 1 (got {q_seq})")
    call = AttentionCall(
        op=op, query=query, key=key, value=value, num_heads=num_heads,
        num_kv_heads=num_key_value_heads, scale=scale_value, input_layout=input_layout,
        atten_mask=atten_mask, pse_shift=pse_shift, actual_kv=actual_seq_lengths,
        block_table=block_table, block_size=block_size)
    return run_attention(call)[0]
