"""DeepSeek-V3.2 style sparse attention: npu_lightning_indexer, npu_sparse_flash_attention and
their quantised forms npu_quant_lightning_indexer and npu_kv_quant_sparse_flash_attention.

Both take the query as BSND or TND and the key as BSND, TND or PA_BSND
([block_num, block_size, KV_N, D] with a block_table). Lengths are int32 tensors.
"""
import torch

from ._common import ConstraintError, as_int_list, ceil_div, f32, is_power_of_two, require

_I64_MAX = 9223372036854775807
_LARGE_SPARSE_COUNTS = (3072, 4096, 5120, 6144, 7168, 8192)


def _check_length_tensors(op, **named):
    for name, value in named.items():
        require(value is None or isinstance(value, torch.Tensor), op,
                f"{name} must be an int32 Tensor, not a Python list")


def _query_batches(op, t, layout, actual):
    """Per-batch float32 (s, N, D) query slices and their lengths."""
    require(layout in ("BSND", "TND"), op, f"layout_query must be 'BSND' or 'TND' (got {layout!r})")
    x = f32(t) if t is not None else None
    if layout == "BSND":
        lens = as_int_list(actual) if actual is not None else [t.shape[1]] * t.shape[0]
        require(len(lens) == t.shape[0], op, "actual_seq_lengths_query must have B entries")
        return [x[b, :lens[b]] for b in range(t.shape[0])], lens
    cum = as_int_list(actual)
    require(cum is not None, op, "actual_seq_lengths_query is required for TND")
    require(cum[-1] == t.shape[0], op, "last actual_seq_lengths_query must equal T")
    bounds = list(zip([0] + cum[:-1], cum))
    require(all(a <= b for a, b in bounds), op, "actual_seq_lengths_query must be cumulative")
    return [x[a:b] for a, b in bounds], [b - a for a, b in bounds]


def _kv_batches(op, t, layout, actual, block_table, batch, name="layout_kv"):
    """Per-batch float32 (s, N2, D) key slices."""
    x = f32(t)
    if layout == "BSND":
        lens = as_int_list(actual) if actual is not None else [t.shape[1]] * t.shape[0]
        return [x[b, :lens[b]] for b in range(batch)]
    if layout == "TND":
        cum = as_int_list(actual)
        require(cum is not None, op, f"actual lengths are required for {name} TND")
        bounds = list(zip([0] + cum[:-1], cum))
        return [x[a:b] for a, b in bounds]
    if layout == "PA_BSND":
        require(block_table is not None and actual is not None, op,
                f"{name} PA_BSND needs block_table and the key lengths")
        bs = t.shape[1]
        require(bs % 16 == 0 and bs <= 1024, op,
                f"PA_BSND block_size must be a multiple of 16 and <= 1024 (got {bs})")
        lens = as_int_list(actual)
        out = []
        for b in range(batch):
            ids = block_table[b, :ceil_div(lens[b], bs)].long()
            out.append(x[ids].reshape(-1, x.shape[2], x.shape[3])[:lens[b]])
        return out
    raise ConstraintError(op, f"{name} must be 'BSND', 'TND' or 'PA_BSND' (got {layout!r})")


def _causal_limit(sparse_mode, i, q_len, kv_len):
    """Last key position query row i may see (inclusive)."""
    if sparse_mode == 3:
        return kv_len - q_len + i
    return kv_len - 1


def npu_lightning_indexer(query, key, weights, *, actual_seq_lengths_query=None,
                          actual_seq_lengths_key=None, block_table=None, layout_query="BSND",
                          layout_key="BSND", sparse_count=2048, sparse_mode=3,
                          pre_tokens=2**63-1, next_tokens=2**63-1, return_value=False):
    """score[j] = sum_h w_h * relu(q_h . k_j); returns top-`sparse_count` indices, -1 padded."""
    op = "npu_lightning_indexer"
    require(query.shape[-1] == 128 and key.shape[-1] == 128, op, "query and key D must be 128")
    require(key.shape[-2] == 1, op, "key N2 must be 1")
    require(query.shape[-2] <= 64, op, f"query N1 must be <= 64 (got {query.shape[-2]})")
    require(1 <= sparse_count <= 2048 or sparse_count in _LARGE_SPARSE_COUNTS, op,
            "sparse_count must be in [1, 2048] or one of 3072, 4096, 5120, 6144, 7168, 8192")
    require(sparse_mode in (0, 3), op, "sparse_mode must be 0 or 3")
    require(pre_tokens == _I64_MAX and next_tokens == _I64_MAX, op,
            "pre_tokens/next_tokens only support the default 2^63-1")
    _check_length_tensors(op, actual_seq_lengths_query=actual_seq_lengths_query,
                          actual_seq_lengths_key=actual_seq_lengths_key)
    qs, q_lens = _query_batches(op, query, layout_query, actual_seq_lengths_query)
    ws, _ = _query_batches(op, weights.unsqueeze(-1), layout_query, actual_seq_lengths_query)
    ks = _kv_batches(op, key, layout_key, actual_seq_lengths_key, block_table, len(qs),
                     "layout_key")
    idx_rows, val_rows = [], []
    for b, q in enumerate(qs):
        k = ks[b][:, 0]  # (s2, D)
        kv_len = k.shape[0]
        scores = torch.relu(torch.einsum("snd,td->snt", q, k))
        scores = (scores * ws[b]).sum(dim=1)  # (s1, s2)
        for i in range(q.shape[0]):
            limit = _causal_limit(sparse_mode, i, q_lens[b], kv_len)
            row = scores[i, :max(limit + 1, 0)]
            take = min(sparse_count, row.shape[0])
            # Ties go to the lower position (stable sort on the negated score).
            order = torch.sort(-row, stable=True).indices[:take]
            idx = torch.full((sparse_count,), -1, dtype=torch.int32)
            val = torch.zeros(sparse_count, dtype=torch.float32)
            if take:
                idx[:take] = order.to(torch.int32)
                val[:take] = row[order]
            idx_rows.append(idx)
            val_rows.append(val)
    indices = torch.stack(idx_rows) if idx_rows else torch.empty(0, sparse_count, dtype=torch.int32)
    values = torch.stack(val_rows) if val_rows else torch.empty(0, sparse_count)
    if layout_query == "BSND":
        batch, s1 = query.shape[0], query.shape[1]
        full_i = torch.full((batch, s1, 1, sparse_count), -1, dtype=torch.int32)
        full_v = torch.zeros(batch, s1, 1, sparse_count)
        row = 0
        for b, n in enumerate(q_lens):
            full_i[b, :n, 0] = indices[row:row + n]
            full_v[b, :n, 0] = values[row:row + n]
            row += n
        indices, values = full_i, full_v
    else:
        indices, values = indices.unsqueeze(1), values.unsqueeze(1)
    values = values.to(query.dtype) if return_value else torch.empty(0, dtype=query.dtype)
    return indices, values


def _selected_positions(indices, block, kv_len, limit):
    """Key positions covered by the valid sparse indices, capped by length and causality."""
    pos = []
    for v in indices.tolist():
        if v < 0:
            continue
        start = v * block
        pos.extend(p for p in range(start, start + block) if p < kv_len and p <= limit)
    return sorted(set(pos))


def npu_sparse_flash_attention(query, key, value, sparse_indices, scale_value, *, block_table=None,
                               actual_seq_lengths_query=None, actual_seq_lengths_kv=None,
                               query_rope=None, key_rope=None, sparse_block_size=1,
                               layout_query='BSND', layout_kv='BSND', sparse_mode=3,
                               pre_tokens=9223372036854775807, next_tokens=9223372036854775807,
                               attention_mode=0, return_softmax_lse=False):
    """softmax(scale * [q, q_rope] . [k, k_rope]~) v~ over the keys named by sparse_indices.

    Returns (attention_out, softmax_max, softmax_sum); the last two are empty unless
    return_softmax_lse is True.
    """
    op = "npu_sparse_flash_attention"
    require(attention_mode == 2, op, "attention_mode only supports 2 (MLA-absorb)")
    require(query.shape[-1] == 512 and key.shape[-1] == 512 and value.shape[-1] == 512, op,
            f"query/key/value D must be 512 (got {query.shape[-1]}, {key.shape[-1]}, "
            f"{value.shape[-1]})")
    require(query_rope is not None and key_rope is not None, op,
            "query_rope and key_rope are required in MLA-absorb mode")
    require(query_rope.shape[-1] == 64 and key_rope.shape[-1] == 64, op, "rope D must be 64")
    require(key.shape[-2] == 1, op, "KV_N must be 1")
    n1 = query.shape[-2]
    require(is_power_of_two(n1) and n1 <= 128, op, f"query N1 must be in {{1, 2, 4, ..., 128}} (got {n1})")
    require(tuple(key.shape) == tuple(value.shape), op, "key and value must have the same shape")
    require(is_power_of_two(sparse_block_size) and sparse_block_size <= 128, op,
            "sparse_block_size must be a power of 2 in [1, 128]")
    require(sparse_mode in (0, 3), op, "sparse_mode must be 0 or 3")
    require(pre_tokens == _I64_MAX and next_tokens == _I64_MAX, op,
            "pre_tokens/next_tokens only support the default 2^63-1")
    _check_length_tensors(op, actual_seq_lengths_query=actual_seq_lengths_query,
                          actual_seq_lengths_kv=actual_seq_lengths_kv)
    require(sparse_indices.dtype == torch.int32, op, "sparse_indices must be int32")
    if layout_kv != "PA_BSND":
        require(layout_query == layout_kv, op,
                "layout_query must equal layout_kv unless layout_kv is PA_BSND")
    else:
        require(key.shape[1] % sparse_block_size == 0, op,
                "sparse_block_size must divide the PA block_size")
    qs, q_lens = _query_batches(op, query, layout_query, actual_seq_lengths_query)
    qrs, _ = _query_batches(op, query_rope, layout_query, actual_seq_lengths_query)
    ks = _kv_batches(op, key, layout_kv, actual_seq_lengths_kv, block_table, len(qs))
    krs = _kv_batches(op, key_rope, layout_kv, actual_seq_lengths_kv, block_table, len(qs))
    vs = _kv_batches(op, value, layout_kv, actual_seq_lengths_kv, block_table, len(qs))
    if layout_query == "BSND":
        idx_b = [sparse_indices[b, :q_lens[b], 0] for b in range(len(qs))]
    else:
        cum = as_int_list(actual_seq_lengths_query)
        idx_b = [sparse_indices[a:b, 0] for a, b in zip([0] + cum[:-1], cum)]
    outs, maxes, sums = [], [], []
    for b, q in enumerate(qs):
        kv_len = ks[b].shape[0]
        o_rows, m_rows, s_rows = [], [], []
        for i in range(q.shape[0]):
            limit = _causal_limit(sparse_mode, i, q_lens[b], kv_len)
            pos = _selected_positions(idx_b[b][i], sparse_block_size, kv_len, limit)
            if not pos:
                o_rows.append(torch.zeros(n1, 512))
                m_rows.append(torch.full((n1,), float("-inf")))
                s_rows.append(torch.zeros(n1))
                continue
            sel = torch.tensor(pos)
            k, kr, v = ks[b][sel, 0], krs[b][sel, 0], vs[b][sel, 0]
            s = (q[i] @ k.t() + qrs[b][i] @ kr.t()) * scale_value  # (N1, n)
            m = s.amax(dim=-1, keepdim=True)
            p = torch.exp(s - m)
            total = p.sum(dim=-1, keepdim=True)
            o_rows.append((p @ v) / total)
            m_rows.append(m.squeeze(-1))
            s_rows.append(total.squeeze(-1))
        outs.append(torch.stack(o_rows) if o_rows else torch.zeros(0, n1, 512))
        maxes.append(torch.stack(m_rows) if m_rows else torch.zeros(0, n1))
        sums.append(torch.stack(s_rows) if s_rows else torch.zeros(0, n1))
    if layout_query == "BSND":
        out = torch.zeros(query.shape[0], query.shape[1], n1, 512)
        smax = torch.zeros(query.shape[0], 1, query.shape[1], n1)
        ssum = torch.zeros(query.shape[0], 1, query.shape[1], n1)
        for b, o in enumerate(outs):
            out[b, :o.shape[0]] = o
            smax[b, 0, :o.shape[0]] = maxes[b]
            ssum[b, 0, :o.shape[0]] = sums[b]
    else:
        out = torch.cat(outs)
        smax, ssum = torch.cat(maxes).unsqueeze(0), torch.cat(sums).unsqueeze(0)
    if not return_softmax_lse:
        smax = ssum = torch.empty(0, dtype=torch.float32)
    return out.to(query.dtype), smax, ssum


def npu_quant_lightning_indexer(query, key, weights, query_dequant_scale, key_dequant_scale,
                                query_quant_mode, key_quant_mode, *, actual_seq_lengths_query=None,
                                actual_seq_lengths_key=None, block_table=None, layout_query='BSND',
                                layout_key='BSND', sparse_count=2048, sparse_mode=3,
                                pre_tokens=2**63-1, next_tokens=2**63-1, query_dtype=None,
                                key_dtype=None):
    """npu_lightning_indexer on int8 query/key with per-token-head dequant scales.

    relu(s_q s_k (q . k)) equals relu((s_q q) . (s_k k)), so the inputs are dequantised
    first. Returns only the int32 indices.
    """
    op = "npu_quant_lightning_indexer"
    require(query.dtype == torch.int8 and key.dtype == torch.int8, op,
            "query and key must be int8 (FP8/HiF8 exist only on Ascend 950)")
    require(query_quant_mode == 0 and key_quant_mode == 0, op,
            "query_quant_mode and key_quant_mode only support 0 (per-token-head)")
    require(1 <= sparse_count <= 2048, op, "sparse_count must lie in [1, 2048]")
    q = f32(query) * f32(query_dequant_scale).unsqueeze(-1)
    k = f32(key) * f32(key_dequant_scale).unsqueeze(-1)
    indices, _ = npu_lightning_indexer(
        q, k, weights, actual_seq_lengths_query=actual_seq_lengths_query,
        actual_seq_lengths_key=actual_seq_lengths_key, block_table=block_table,
        layout_query=layout_query, layout_key=layout_key, sparse_count=sparse_count,
        sparse_mode=sparse_mode, pre_tokens=pre_tokens, next_tokens=next_tokens)
    return indices


_C8_NOPE, _C8_ROPE, _C8_TILE = 512, 64, 128
_C8_ROW = _C8_NOPE + 2 * _C8_ROPE + 4 * (_C8_NOPE // _C8_TILE)  # 656 bytes


def unpack_c8_rows(rows, rope_dtype):
    """The (nope, rope) of combined C8 cache rows, both float32.

    A row is D = 656 int8 lanes: 512 int8 nope values, the 64 rope values stored in
    the query dtype (128 bytes) and one float32 scale per 128-wide nope tile (16
    bytes). The nope part dequantises tile by tile: value = int8 * scale of its tile.
    """
    nope = rows[..., :_C8_NOPE].float()
    rope = rows[..., _C8_NOPE:_C8_NOPE + 2 * _C8_ROPE].contiguous().view(rope_dtype).float()
    scales = rows[..., _C8_NOPE + 2 * _C8_ROPE:].contiguous().view(torch.float32)
    tiles = nope.reshape(*nope.shape[:-1], _C8_NOPE // _C8_TILE, _C8_TILE) * scales.unsqueeze(-1)
    return tiles.reshape(nope.shape), rope


def npu_kv_quant_sparse_flash_attention(query, key, value, sparse_indices, scale_value,
                                        key_quant_mode, value_quant_mode, *,
                                        key_dequant_scale=None, value_dequant_scale=None,
                                        block_table=None, actual_seq_lengths_query=None,
                                        actual_seq_lengths_kv=None, sparse_block_size=1,
                                        layout_query="BSND", layout_kv="BSND", sparse_mode=3,
                                        pre_tokens=2**63-1, next_tokens=2**63-1, attention_mode=0,
                                        quant_scale_repo_mode=1, tile_size=128, rope_head_dim=64):
    """npu_sparse_flash_attention in MLA-absorb mode over C8 cache rows (see unpack_c8_rows).

    The query is cat(q_nope, q_rope) (D 576); key and value are the same int8 rows
    (D 656). Each selected row's nope part is dequantised per 128-wide tile and used
    as key and value, its rope part joins the key. Returns the attention output alone,
    [.., Q_N, 512] in the query dtype (the value is the 512-wide latent).
    """
    op = "npu_kv_quant_sparse_flash_attention"
    require(attention_mode == 2, op, "attention_mode only supports 2 (MLA-absorb)")
    require(key_quant_mode == 2 and value_quant_mode == 2, op,
            "key_quant_mode and value_quant_mode only support 2 (per-tile)")
    require(quant_scale_repo_mode == 1, op, "quant_scale_repo_mode only supports 1 (scales stored in the rows)")
    require(tile_size == _C8_TILE, op, "tile_size only supports 128")
    require(rope_head_dim == _C8_ROPE, op, "rope_head_dim only supports 64")
    require(key_dequant_scale is None and value_dequant_scale is None, op,
            "key_dequant_scale/value_dequant_scale are reserved: keep None (the scales live in the rows)")
    require(query.dtype in (torch.bfloat16, torch.float16), op, "query must be bfloat16 or float16")
    require(query.shape[-1] == _C8_NOPE + _C8_ROPE, op,
            f"query D must be 576 (512 nope + 64 rope; got {query.shape[-1]})")
    require(key.dtype == torch.int8 and value.dtype == torch.int8, op, "key and value must be int8 C8 rows")
    require(key.shape[-1] == _C8_ROW and value.shape[-1] == _C8_ROW, op,
            f"key/value D must be 656 (512 int8 + 64 rope x 2 bytes + 4 float32 scales; got {key.shape[-1]})")
    require(tuple(key.shape) == tuple(value.shape), op, "key and value must have the same shape")
    require(is_power_of_two(sparse_block_size) and sparse_block_size <= 16, op,
            "sparse_block_size must be a power of 2 in [1, 16]")
    nope, rope = unpack_c8_rows(key, query.dtype)
    v_nope, _ = unpack_c8_rows(value, query.dtype)
    out, _, _ = npu_sparse_flash_attention(
        query[..., :_C8_NOPE], nope, v_nope, sparse_indices, scale_value, block_table=block_table,
        actual_seq_lengths_query=actual_seq_lengths_query, actual_seq_lengths_kv=actual_seq_lengths_kv,
        query_rope=query[..., _C8_NOPE:], key_rope=rope, sparse_block_size=sparse_block_size,
        layout_query=layout_query, layout_kv=layout_kv, sparse_mode=sparse_mode, pre_tokens=pre_tokens,
        next_tokens=next_tokens, attention_mode=2)
    return out
