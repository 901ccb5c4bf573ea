"""MoE token permutation: init_routing (v1, v2), compute_expert_tokens, re_routing, finalize_routing."""
import torch

from ._common import f32, quantize_symmetric_rows, require, round_half_even, unsupported


def _stable_sort_ids(ids):
    return torch.sort(ids, stable=True)


def npu_moe_init_routing(x, row_idx, expert_idx, active_num):
    """v1: returns (expanded_x, expanded_row_idx, expanded_expert_idx).

    Pairs are sorted by expert id (stable over the flattened row-major order);
    expanded_row_idx[row_idx of a pair] = its destination row.
    """
    op = "npu_moe_init_routing"
    require(x.dim() == 2 and expert_idx.dim() == 2, op, "x and expert_idx must be 2-D")
    require(row_idx.shape == expert_idx.shape, op, "row_idx and expert_idx must have the same shape")
    require(row_idx.dtype == torch.int32 and expert_idx.dtype == torch.int32, op,
            "row_idx and expert_idx must be int32")
    rows, k = expert_idx.shape
    sorted_ids, order = _stable_sort_ids(expert_idx.reshape(-1).long())
    dst_to_src = row_idx.reshape(-1).long()[order]
    expanded_row_idx = torch.zeros(rows * k, dtype=torch.int32)
    expanded_row_idx[dst_to_src] = torch.arange(rows * k, dtype=torch.int32)
    active = min(active_num, rows) * k
    expanded_x = x[dst_to_src[:active] % rows]
    return expanded_x, expanded_row_idx, sorted_ids.to(torch.int32)


def npu_moe_compute_expert_tokens(sorted_expert_for_source_row, num_expert):
    """Cumulative count of pairs with expert id <= e, for e in [0, num_expert)."""
    ids = sorted_expert_for_source_row.reshape(-1).long()
    counts = torch.bincount(ids[(ids >= 0) & (ids < num_expert)], minlength=num_expert)
    return torch.cumsum(counts, 0).to(torch.int32)


def _token_statistics(op, kept_ids, start, end, kind, expert_num):
    counts = torch.bincount(kept_ids - start, minlength=end - start)[:end - start].to(torch.int64)
    if kind == 0:
        return torch.cumsum(counts, 0)
    if kind == 1:
        return counts
    require(kind == 2, op, "expert_tokens_num_type must be 0 (cumsum), 1 (count) or 2 (key_value)")
    rows = max(expert_num, end - start)
    table = torch.zeros(rows, 2, dtype=torch.int64)
    nonzero = torch.nonzero(counts).reshape(-1)
    table[:nonzero.numel(), 0] = nonzero + start
    table[:nonzero.numel(), 1] = counts[nonzero]
    return table


def _v2_quantise(op, rows_x, quant_mode, scale, offset, row_expert, start):
    """Returns (expanded_x, expanded_scale) for the kept rows."""
    if quant_mode == -1:
        return rows_x, None
    if quant_mode == 0:
        require(scale is not None and offset is not None, op, "static quant (quant_mode 0) needs scale and offset")
        q = round_half_even(f32(rows_x) * f32(scale).reshape(-1)[0] + f32(offset).reshape(-1)[0])
        return q.clamp(-128, 127).to(torch.int8), None
    require(quant_mode == 1, op, "quant_mode must be -1, 0 or 1 (2/3 MXFP8 are not modelled)")
    v = f32(rows_x)
    if scale is not None:
        s = f32(scale)
        v = v * (s.reshape(1, -1) if s.shape[0] == 1 else s[row_expert - start])
    q, qscale = quantize_symmetric_rows(v)
    return q.to(torch.int8), qscale


def npu_moe_init_routing_v2(x, expert_idx, *, scale=None, offset=None, active_num=-1,
                            expert_capacity=-1, expert_num=-1, drop_pad_mode=0,
                            expert_tokens_num_type=0, expert_tokens_num_flag=False,
                            quant_mode=-1, active_expert_range=[], row_idx_type=0):
    """Returns (expanded_x, expanded_row_idx, expert_token_cumsum_or_count, expanded_scale).

    Pairs i = t * K + j are sorted stably by expert id; only ids inside
    active_expert_range [start, end) are kept. expanded_x has NUM_ROWS * K rows (or
    min(active_num, NUM_ROWS * K)); rows past the kept ones are zero.
    """
    op = "npu_moe_init_routing_v2"
    require(x.dim() == 2 and expert_idx.dim() == 2, op, "x and expert_idx must be 2-D")
    require(x.shape[0] == expert_idx.shape[0], op, "x and expert_idx must have the same NUM_ROWS")
    require(expert_idx.dtype == torch.int32, op,
            f"expert_idx must be int32 (got {expert_idx.dtype}); cast top-k ids with .to(torch.int32)")
    if drop_pad_mode != 0:
        raise unsupported(op, "drop_pad_mode 1 (drop/pad to expert_capacity)")
    rows, k = expert_idx.shape
    if active_expert_range:
        start, end = int(active_expert_range[0]), int(active_expert_range[1])
    else:
        require(expert_num > 0, op, "expert_num is needed when active_expert_range is empty")
        start, end = 0, expert_num
    require(0 <= start < end, op, "active_expert_range must be [start, end) with 0 <= start < end")
    if expert_num >= 0:
        limit = 5120 if expert_tokens_num_type == 2 else 10240
        require(expert_num <= limit, op, f"expert_num must be in [0, {limit}]")
    require(row_idx_type in (0, 1), op, "row_idx_type must be 0 (gather) or 1 (scatter)")
    flat = expert_idx.reshape(-1).long()
    in_range = (flat >= start) & (flat < end)
    keyed = torch.where(in_range, flat, torch.full_like(flat, 2 ** 62))
    sorted_ids, order = _stable_sort_ids(keyed)
    kept = int(in_range.sum())
    kept_order = order[:kept]
    out_rows = rows * k if active_num in (-1, 0) else min(active_num, rows * k)
    produced = min(kept, out_rows)
    src_rows = kept_order[:produced] // k
    qx, qscale = _v2_quantise(op, x[src_rows], quant_mode, scale, offset,
                              sorted_ids[:produced], start)
    expanded_x = torch.zeros(out_rows, x.shape[1], dtype=qx.dtype)
    expanded_x[:produced] = qx
    if row_idx_type == 1:
        expanded_row_idx = torch.full((rows * k,), -1, dtype=torch.int32)
        expanded_row_idx[:kept] = kept_order.to(torch.int32)
    else:
        expanded_row_idx = torch.full((rows * k,), -1, dtype=torch.int32)
        expanded_row_idx[kept_order] = torch.arange(kept, dtype=torch.int32)
    stats = _token_statistics(op, sorted_ids[:kept], start, end, expert_tokens_num_type, expert_num) \
        if expert_tokens_num_flag else torch.empty(0, dtype=torch.int64)
    expanded_scale = torch.zeros(rows * k, dtype=torch.float32)
    if qscale is not None:
        expanded_scale[:produced] = qscale
    elif quant_mode == -1 and scale is not None:
        expanded_scale[:produced] = f32(scale).reshape(-1)[src_rows]
    else:
        expanded_scale = torch.empty(0, dtype=torch.float32)
    return expanded_x, expanded_row_idx, stats, expanded_scale


def npu_moe_re_routing(tokens, expert_token_num_per_rank, *, per_token_scales=None,
                       expert_token_num_type=1, idx_type=0):
    """Rank-major rows (rank r, then local expert e) to expert-major order.

    Returns (permute_tokens, permute_per_token_scales, permute_token_idx, expert_token_num):
    permute_token_idx[new row] = old row (gather index).
    """
    op = "npu_moe_re_routing"
    require(expert_token_num_type == 1, op, "expert_token_num_type only supports 1 (count)")
    require(idx_type == 0, op, "idx_type only supports 0 (gather index)")
    require(tokens.dim() == 2 and 0 < tokens.shape[1] < 16384, op, "tokens must be (A, H) with 0 < H < 16384")
    counts = expert_token_num_per_rank.long()
    require(counts.dim() == 2, op, "expert_token_num_per_rank must be (ranks, local experts)")
    ranks, experts = counts.shape
    require(int(counts.sum()) == tokens.shape[0], op, "the counts must add up to the token rows")
    src_start = torch.cumsum(counts.reshape(-1), 0) - counts.reshape(-1)
    src_start = src_start.reshape(ranks, experts)
    gather = []
    for e in range(experts):
        for r in range(ranks):
            a = int(src_start[r, e])
            gather.extend(range(a, a + int(counts[r, e])))
    idx = torch.tensor(gather, dtype=torch.long)
    permuted_scales = per_token_scales[idx] if per_token_scales is not None \
        else torch.empty(0, dtype=torch.float32)
    return tokens[idx], permuted_scales, idx.to(torch.int32), counts.sum(dim=0).to(counts.dtype)


def npu_moe_finalize_routing(expanded_permuted_rows, skip1, skip2, bias, scales,
                             expanded_src_to_dst_row, expert_for_source_row, drop_pad_mode=0):
    """out[i] = skip1 + skip2 + sum_k scales[i,k] * (rows[dst(i,k)] + bias[expert[i,k]]).

    dst(i, k) reads expanded_src_to_dst_row at k * NUM_ROWS + i (modes 0/1) or i * K + k
    (modes 2/3); modes 1/3 take (E, C, H) rows and -1 marks a dropped pair.
    """
    op = "npu_moe_finalize_routing"
    require(drop_pad_mode in (0, 1, 2, 3), op, "drop_pad_mode must be 0, 1, 2 or 3")
    require(not (skip1 is None and skip2 is not None), op, "skip2 must be None when skip1 is None")
    require(expanded_src_to_dst_row.dtype == torch.int32, op, "expanded_src_to_dst_row must be int32")
    require(expert_for_source_row is None or expert_for_source_row.dtype == torch.int32, op,
            "expert_for_source_row must be int32")
    h = expanded_permuted_rows.shape[-1]
    rows_flat = f32(expanded_permuted_rows).reshape(-1, h)
    k = scales.shape[1] if scales is not None else (
        expert_for_source_row.shape[1] if expert_for_source_row is not None else 1)
    nk = expanded_src_to_dst_row.numel()
    num_rows = nk // k
    out = torch.zeros(num_rows, h)
    if skip1 is not None:
        out = out + f32(skip1)
    if skip2 is not None:
        out = out + f32(skip2)
    dst = expanded_src_to_dst_row.reshape(-1).long()
    if drop_pad_mode in (0, 1):
        dst = dst.reshape(k, num_rows).t()
    else:
        dst = dst.reshape(num_rows, k)
    valid = dst >= 0
    gathered = rows_flat[dst.clamp(min=0)]  # (num_rows, k, h)
    if bias is not None:
        gathered = gathered + f32(bias)[expert_for_source_row.long()]
    weight = f32(scales) if scales is not None else torch.ones(num_rows, k)
    weight = torch.where(valid, weight, torch.zeros_like(weight))
    out = out + (gathered * weight.unsqueeze(-1)).sum(dim=1)
    return out.to(expanded_permuted_rows.dtype)
