"""Fused attention front ends: FIA v1/v2, PromptFlashAttention, IncreFlashAttention,
npu_fusion_attention (training) and npu_scaled_masked_softmax.

Each function renames its arguments into an AttentionCall and runs the shared core.
Quantisation, KV fake-quantisation, left padding and shared prefixes are not modelled
and raise NotImplementedError.
"""
import torch

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


def _trim_trailing_zero_batches(values):
    """TND lengths may end in zeros for batches that take no part; drop them."""
    if values is None:
        return None
    vals = [int(v) for v in (values.tolist() if hasattr(values, "tolist") else values)]
    while len(vals) > 1 and vals[-1] == 0 and max(vals) > 0:
        vals.pop()
    return vals


def npu_fusion_attention(query, key, value, head_num, input_layout, pse=None, padding_mask=None,
                         atten_mask=None, scale=1., keep_prob=1., pre_tockens=2147483647,
                         next_tockens=2147483647, inner_precise=0, prefix=None,
                         actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
                         gen_mask_parallel=True, sync=False, softmax_layout="", sink=None,
                         dropout_mask=None, seed=0, offset=0):
    """Training flash attention: softmax(mask(scale * (pse + Q K^T))) V.

    Returns (attention_out, softmax_max, softmax_sum, reserved, seed, offset, mask_length).
    softmax_max/sum are float32 (B, N, S, 8) (or (N, T, 8), (T, N, 8) with
    softmax_layout "TND"), the row statistic repeated 8 times. Dropout (keep_prob < 1),
    prefix modes 5-8 and per-head (B, N, S, S) masks are not modelled.
    """
    op = "npu_fusion_attention"
    _reject(op, padding_mask=padding_mask, prefix=prefix, dropout_mask=dropout_mask)
    if keep_prob != 1.0:
        raise unsupported(op, "dropout (keep_prob < 1)")
    if sparse_mode not in (0, 1, 2, 3, 4):
        raise unsupported(op, f"sparse_mode {sparse_mode} (prefix / varlen-split modes)")
    if atten_mask is not None and atten_mask.dim() == 4 and atten_mask.shape[1] > 1:
        raise unsupported(op, "per-head (B, N, S, S) atten_mask")
    layout = input_layout
    q, k, v = query, key, value
    if layout == "SBH":  # sequence-major: reuse the batch-major path
        q, k, v = (t.transpose(0, 1) for t in (query, key, value))
        layout = "BSH"
    if layout == "BSH":
        kv_heads = k.shape[-1] // (q.shape[-1] // head_num)
    elif layout in ("BSND", "TND"):
        kv_heads = k.shape[-2]
    elif layout == "BNSD":
        kv_heads = k.shape[1]
    else:
        raise ValueError(f"{op}: constraint violated: input_layout must be BSH, SBH, BSND, BNSD "
                         f"or TND (got {input_layout!r})")
    call = AttentionCall(
        op=op, query=q, key=k, value=v, num_heads=head_num, num_kv_heads=kv_heads, scale=scale,
        input_layout=layout, sparse_mode=sparse_mode, pre_tokens=pre_tockens,
        next_tokens=next_tockens, atten_mask=atten_mask,
        pse_shift=pse * scale if pse is not None else None,
        actual_q=_trim_trailing_zero_batches(actual_seq_qlen),
        actual_kv=_trim_trailing_zero_batches(actual_seq_kvlen), learnable_sink=sink,
        training_limits=True)
    out, _ = run_attention(call)
    if input_layout == "SBH":
        out = out.transpose(0, 1).contiguous()
    smax, ssum = call.extra["softmax_max"], call.extra["softmax_sum"]
    if layout == "TND" and softmax_layout == "TND":
        smax, ssum = smax.transpose(0, 1), ssum.transpose(0, 1)
    smax, ssum = smax.expand(*smax.shape[:-1], 8).contiguous(), ssum.expand(*ssum.shape[:-1], 8).contiguous()
    reserved = torch.empty(0, dtype=query.dtype)
    return out, smax, ssum, reserved, seed, offset, 0


def npu_scaled_masked_softmax(x, mask, scale=1.0, fixed_triu_mask=False):
    """softmax(x * scale with masked positions set to -10000) over the last axis.

    x is (batch, heads, query length, key length); both lengths must be multiples of 32
    in [32, 4096]. True in mask means masked. -10000 is the fill of the Megatron-style
    kernel this op provides (a fully masked row becomes uniform, not NaN).
    """
    op = "npu_scaled_masked_softmax"
    if fixed_triu_mask:
        raise unsupported(op, "fixed_triu_mask=True")
    if x.dim() != 4:
        raise ValueError(f"{op}: constraint violated: x must be 4-D (N, C, H, W)")
    for axis in (2, 3):
        n = x.shape[axis]
        if not (32 <= n <= 4096 and n % 32 == 0):
            raise ValueError(f"{op}: constraint violated: the last two axes must be multiples "
                             f"of 32 in [32, 4096] (got {tuple(x.shape)})")
    scores = x.to(torch.float32) * scale
    scores = scores.masked_fill(mask.bool(), -10000.0)
    return torch.softmax(scores, dim=-1).to(x.dtype)
