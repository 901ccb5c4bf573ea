"""The computation shared by FIA v1/v2, PFA and IFA once arguments are normalised.

`AttentionCall` carries the already-renamed arguments; `run_attention` validates the
documented constraints, walks the batches and returns (out, softmax_lse).
"""
from dataclasses import dataclass, field
from typing import Any, Optional

import torch

from . import attention_layout as L
from . import attention_mask as M
from ._common import ConstraintError, as_int_list, f32, is_power_of_two, require


@dataclass
class AttentionCall:
    op: str
    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    num_heads: int = 1
    num_kv_heads: int = 0
    scale: float = 1.0
    input_layout: str = "BSH"
    sparse_mode: int = 0
    pre_tokens: int = M.INT_MAX
    next_tokens: int = M.INT_MAX
    atten_mask: Optional[torch.Tensor] = None
    pse_shift: Optional[torch.Tensor] = None
    actual_q: Any = None
    actual_kv: Any = None
    block_table: Optional[torch.Tensor] = None
    block_size: int = 0
    query_rope: Optional[torch.Tensor] = None
    key_rope: Optional[torch.Tensor] = None
    learnable_sink: Optional[torch.Tensor] = None
    want_lse: bool = False
    # npu_fusion_attention: D up to 768, Dq >= Dv, no GQA ratio cap, no TND head-dim
    # table, sinks in any layout, and the softmax max/sum statistics come back.
    training_limits: bool = False
    extra: dict = field(default_factory=dict)


def _attend(q, k, v, scale, allowed, pse=None, sink=None, q_rope=None, k_rope=None):
    """softmax(scale * q k^T + pse) v for one batch; q (N, Sq, D), k/v (KV_N, Skv, D).

    Returns (out, lse, row_max, row_sum). Rows with nothing to attend give zeros and
    lse = +inf.
    """
    if k.shape[1] == 0:  # no keys (KV length 0): the doc specifies an all-zero output
        rows = (q.shape[0], q.shape[1], 1)
        return (torch.zeros(q.shape[0], q.shape[1], v.shape[-1]),
                torch.full(rows, float("inf")), torch.zeros(rows), torch.zeros(rows))
    group = q.shape[0] // k.shape[0]
    k = k.repeat_interleave(group, dim=0)
    v = v.repeat_interleave(group, dim=0)
    scores = q @ k.transpose(-1, -2)
    if q_rope is not None:
        scores = scores + q_rope @ k_rope.repeat_interleave(group, dim=0).transpose(-1, -2)
    scores = scores * scale
    if pse is not None:
        scores = scores + pse
    scores = scores.masked_fill(~allowed.unsqueeze(0), float("-inf"))
    row_max = scores.amax(dim=-1, keepdim=True)
    if sink is not None:
        row_max = torch.maximum(row_max, sink.reshape(-1, 1, 1))
    empty = torch.isinf(row_max) & (row_max < 0)
    row_max = torch.where(empty, torch.zeros_like(row_max), row_max)
    p = torch.exp(scores - row_max)
    denom = p.sum(dim=-1, keepdim=True)
    if sink is not None:
        denom = denom + torch.exp(sink.reshape(-1, 1, 1) - row_max)
    safe = torch.where(denom == 0, torch.ones_like(denom), denom)
    out = (p @ v) / safe
    out = torch.where(denom == 0, torch.zeros_like(out), out)
    lse = torch.where(denom == 0, torch.full_like(denom, float("inf")), torch.log(safe) + row_max)
    return out, lse, row_max, denom


def _check_heads(c, q_heads, kv_heads, mla512=False):
    op = c.op
    require(c.num_heads >= 1, op, "num_heads must be >= 1")
    require(q_heads == c.num_heads, op,
            f"num_heads ({c.num_heads}) must equal the N axis of query ({q_heads})")
    require(c.num_heads <= 256, op, "N must be <= 256")
    require(c.num_heads % kv_heads == 0, op,
            f"num_heads ({c.num_heads}) % num_key_value_heads ({kv_heads}) must be 0")
    # MLA with D=512 takes up to 128 query heads over one KV head (its own
    # section of the constraints), above the general group limit of 64.
    if not c.training_limits and not mla512:
        require(c.num_heads // kv_heads <= 64, op,
                f"num_heads / num_key_value_heads must be <= 64 (got {c.num_heads // kv_heads})")


def _check_mla(c, dq, q_heads, kv_heads, in_layout):
    op = c.op
    if (c.query_rope is None) != (c.key_rope is None):
        raise ConstraintError(op, "query_rope and key_rope must both be given or both omitted")
    if c.query_rope is None:
        return
    require(dq in (512, 128), op, f"with query_rope/key_rope, query D must be 512 or 128 (got {dq})")
    require(c.query_rope.shape[-1] == 64 and c.key_rope.shape[-1] == 64, op,
            "query_rope and key_rope D must be 64")
    if dq == 512:
        require(c.sparse_mode in (0, 3, 4), op, "MLA with D=512 supports sparse_mode 0, 3 or 4")
        require(is_power_of_two(q_heads) and q_heads <= 128, op,
                "MLA with D=512 needs query N in {1, 2, 4, ..., 128}")
        require(kv_heads == 1, op, "MLA with D=512 needs key/value N = 1")
        require(in_layout != "NTD", op, "MLA with D=512 does not support NTD input")
        require(c.want_lse is False, op, "MLA with D=512 does not support softmax_lse")


def _check_token_layout_dims(c, dq, dk, dv):
    if c.query_rope is not None:
        if dq != 512:
            require(dq == dk == dv == 128, c.op, "with TND/NTD layouts and rope inputs, query/key/"
                                                 f"value D must all be 128 (got {dq}, {dk}, {dv})")
        return
    ok = (dq == dk == dv == 128) or (dq == dk == 192 and dv in (128, 192))
    require(ok, c.op, f"with TND/NTD layouts, query/key/value D must all be 128, or query and key "
                      f"192 with value 128 or 192 (got {dq}, {dk}, {dv})")


def _check_paged(c, q_len):
    op = c.op
    require(c.actual_kv is not None, op, "PagedAttention (block_table) needs actual_seq_lengths_kv")
    require(c.block_table.dim() == 2, op, "block_table must be 2-D (B, max blocks per sequence)")
    bs = c.block_size
    mla_or_tokens = c.query_rope is not None or L.is_token_layout(L.split_layout(op, c.input_layout)[0])
    if mla_or_tokens:
        require(bs % 16 == 0 and 0 < bs <= 1024, op,
                f"block_size must be a multiple of 16 and <= 1024 (got {bs})")
    elif q_len > 1:
        require(bs % 128 == 0 and 128 <= bs <= 512, op,
                f"with Q_S > 1, block_size must be a multiple of 128 in [128, 512] (got {bs})")
    else:
        require(bs % 16 == 0 and 0 < bs <= 512, op,
                f"with Q_S = 1, block_size must be a multiple of 16 and <= 512 (got {bs})")


def _sparse_setup(c, q_len_max):
    """Decides the effective sparse mode and validates the mask for it."""
    op = c.op
    require(c.sparse_mode in (0, 1, 2, 3, 4), op,
            f"sparse_mode must be 0, 1, 2, 3 or 4 (got {c.sparse_mode}); 5-8 are not supported")
    incremental = q_len_max == 1 and c.query_rope is None and not c.training_limits
    if incremental:
        # The incremental path ignores sparse_mode and pre/next_tokens, so a
        # mask given for mode 2/3/4 (the compressed 2048 x 2048 one) would be
        # read with the mode 0 shapes, where a 2-D mask is (B, KV_S): the
        # device then masks by its rows or refuses it. Said here, not guessed.
        require(c.sparse_mode in (0, 1) or c.atten_mask is None, op,
                f"Q_S is 1 (the incremental path), which ignores sparse_mode {c.sparse_mode}: the "
                f"atten_mask of shape {tuple(c.atten_mask.shape) if c.atten_mask is not None else ()} "
                "would be read as a (B, KV_S) or (B, 1, 1, KV_S) mask; pass atten_mask=None for a "
                "decode step that sees every cached key, or a mask of those shapes")
        return 0, M.INT_MAX, M.INT_MAX, c.atten_mask
    mode = c.sparse_mode
    if mode in (2, 3, 4):
        M.check_optimized_mask(op, mode, c.atten_mask)
        return mode, c.pre_tokens, c.next_tokens, None
    if mode == 1:
        require(c.atten_mask is not None, op, "sparse_mode 1 (allMask) needs a full atten_mask")
    return mode, c.pre_tokens, c.next_tokens, c.atten_mask


def _query_batches(c, in_layout, q_heads):
    """(q_lens, per-batch float32 (N, s, D) query slices, query_rope slices or None)."""
    q, rope = c.query, c.query_rope
    if L.is_token_layout(in_layout):
        total = q.shape[0] if in_layout == "TND" else q.shape[1]
        bounds = L.cumulative_bounds(c.op, "actual_seq_lengths (query)", as_int_list(c.actual_q),
                                     total)
        qr = L.token_slices(rope, in_layout, bounds) if rope is not None else None
        return [b - a for a, b in bounds], L.token_slices(q, in_layout, bounds), qr
    batch, seq = q.shape[0], (q.shape[2] if in_layout == "BNSD" else q.shape[1])
    lens = L.per_batch_lengths(c.op, "actual_seq_lengths", c.actual_q, batch, seq)
    q4 = L.to_bnsd(q, in_layout, q_heads)
    qr = None
    if rope is not None:
        r4 = L.to_bnsd(rope, in_layout, q_heads)
        qr = [r4[b, :, :lens[b]] for b in range(batch)]
    return lens, [q4[b, :, :lens[b]] for b in range(batch)], qr


def _paged_kv_batches(c, kv_heads, batch):
    """Per-batch slices gathered from paged caches through block_table."""
    op = c.op
    lens = L.per_batch_lengths(op, "actual_seq_lengths_kv", c.actual_kv, batch,
                               c.block_table.shape[1] * c.block_size)
    require(c.block_table.shape[0] >= batch, op, "block_table rows must cover every batch")

    def gather(cache):
        if cache is None:
            return None
        cache_bnsd = L.paged_cache_bnsd(op, cache, kv_heads, c.block_size)
        return [L.gather_paged(cache_bnsd, c.block_table, b, lens[b]) for b in range(batch)]

    return lens, gather(c.key), gather(c.value), gather(c.key_rope)


def _kv_batches(c, in_layout, kv_heads, batch):
    """(kv_lens, key, value and key_rope per-batch float32 (KV_N, s, D) slices)."""
    if c.block_table is not None:
        return _paged_kv_batches(c, kv_heads, batch)
    k, v, rope = c.key, c.value, c.key_rope
    if L.is_token_layout(in_layout):
        total = k.shape[0] if in_layout == "TND" else k.shape[1]
        bounds = L.cumulative_bounds(c.op, "actual_seq_lengths_kv", as_int_list(c.actual_kv), total)
        require(len(bounds) == batch, c.op,
                "actual_seq_lengths and actual_seq_lengths_kv must have the same length")
        slices = [L.token_slices(t, in_layout, bounds) if t is not None else None
                  for t in (k, v, rope)]
        return [b - a for a, b in bounds], *slices
    seq = k.shape[2] if in_layout == "BNSD" else k.shape[1]
    lens = L.per_batch_lengths(c.op, "actual_seq_lengths_kv", c.actual_kv, batch, seq)

    def cut(t):
        if t is None:
            return None
        t4 = L.to_bnsd(t, in_layout, kv_heads)
        return [t4[b, :, :lens[b]] for b in range(batch)]

    return lens, cut(k), cut(v), cut(rope)


def run_attention(c):
    op = c.op
    in_layout, out_layout = L.split_layout(op, c.input_layout)
    q_heads, dq = L.heads_dim(op, c.query, in_layout, c.num_heads)
    kv_heads = c.num_kv_heads or c.num_heads
    paged = c.block_table is not None
    if paged:
        require(c.block_size > 0, op, "PagedAttention (block_table) needs block_size")
        dk = L.paged_cache_bnsd(op, c.key, kv_heads, c.block_size).shape[-1]
        dv = L.paged_cache_bnsd(op, c.value, kv_heads, c.block_size).shape[-1]
        k_heads = kv_heads
    else:
        k_heads, dk = L.heads_dim(op, c.key, in_layout, kv_heads)
        _, dv = L.heads_dim(op, c.value, in_layout, kv_heads)
    _check_heads(c, q_heads, kv_heads, mla512=c.query_rope is not None and dq == 512)
    require(k_heads == kv_heads, op, f"key N ({k_heads}) must equal num_key_value_heads ({kv_heads})")
    require(dq == dk, op, f"query D ({dq}) must equal key D ({dk})")
    if c.training_limits:
        require(1 <= dq <= 768 and dk >= dv, op, f"D must lie in [1, 768] with Dk >= Dv (got {dq}, {dv})")
    else:
        require(dq <= 512, op, f"D must be <= 512 (got {dq})")
        _check_mla(c, dq, q_heads, kv_heads, in_layout)
        if L.is_token_layout(in_layout):
            _check_token_layout_dims(c, dq, dk, dv)
    if c.learnable_sink is not None and not c.training_limits:
        require(in_layout == "TND" or c.input_layout == "NTD_TND", op,
                "learnable_sink is only supported with TND or NTD_TND layouts")
        require(dv <= 128, op, "learnable_sink needs value D <= 128")

    q_lens, qs, qr = _query_batches(c, in_layout, q_heads)
    batch = len(q_lens)
    kv_lens, ks, vs, krs = _kv_batches(c, in_layout, kv_heads, batch)
    q_len_max = max(q_lens) if q_lens else 0
    if paged:
        _check_paged(c, q_len_max)
    mode, pre, nxt, user_mask = _sparse_setup(c, q_len_max)
    dense_q = not L.is_token_layout(in_layout)
    q_dim = c.query.shape[2 if in_layout == "BNSD" else 1] if dense_q else q_len_max
    kv_dim = max(kv_lens) if kv_lens else 0
    if user_mask is not None:
        M.check_full_mask(op, user_mask, batch, q_len_max, kv_dim)
    sink = f32(c.learnable_sink) if c.learnable_sink is not None else None

    outs, lses, maxes, sums = [], [], [], []
    for b in range(batch):
        sq, skv = q_lens[b], kv_lens[b]
        masked = M.user_mask_rows(user_mask, b, sq, skv, q_len_max == 1) \
            if user_mask is not None else None
        allowed = M.allowed_positions(mode, sq, skv, pre, nxt, masked)
        pse = None
        if c.pse_shift is not None:
            p = f32(c.pse_shift)
            pse = p[b if p.shape[0] > 1 else 0, :, :sq, :skv]
        o, lse, row_max, row_sum = _attend(
            qs[b], ks[b], vs[b], c.scale, allowed, pse, sink,
            qr[b] if qr is not None else None, krs[b] if krs is not None else None)
        outs.append(o)
        lses.append(lse)
        maxes.append(row_max)
        sums.append(row_sum)

    if dense_q:
        out = L.assemble_dense(outs, batch, q_heads, q_dim, dv, out_layout)
        lse_full = L.assemble_dense(lses, batch, q_heads, q_dim, 1, "BNSD")
    else:
        out = L.assemble_tokens(outs, out_layout)
        lse_full = L.assemble_tokens(lses, "TND")
    if c.training_limits:
        if dense_q:
            c.extra["softmax_max"] = L.assemble_dense(maxes, batch, q_heads, q_dim, 1, "BNSD")
            c.extra["softmax_sum"] = L.assemble_dense(sums, batch, q_heads, q_dim, 1, "BNSD")
        else:
            c.extra["softmax_max"] = L.assemble_tokens(maxes, "NTD")
            c.extra["softmax_sum"] = L.assemble_tokens(sums, "NTD")
    out = out.to(c.query.dtype)
    lse = lse_full if c.want_lse else torch.zeros(1, dtype=torch.float32)
    return out, lse
