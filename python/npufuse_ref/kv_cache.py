"""KV cache writes: scatter_update(_), npu_scatter_nd_update(_), npu_scatter_pa_kv_cache.

The in-place forms modify their first tensor argument like the device does.
"""

from ._common import require, unsupported


def scatter_update_(data, indices, updates, axis):
    """For each batch row b, updates[b] lands in data[b] along `axis` starting at indices[b]."""
    op = "scatter_update_"
    require(2 <= data.dim() <= 8, op, "data must have 2 to 8 dims")
    require(data.dim() == updates.dim(), op, "data and updates must have the same rank")
    if indices.dim() != 1:
        raise unsupported(op, "2-D indices")
    ax = axis % data.dim()
    require(ax != 0, op, "axis must not be the batch axis 0")
    require(indices.shape[0] == updates.shape[0], op, "indices must have one entry per batch row")
    width = updates.shape[ax]
    for b, start in enumerate(indices.tolist()):
        require(0 <= start and start + width <= data.shape[ax], op,
                f"index {start} + update length {width} exceeds axis size {data.shape[ax]}")
        data[b].narrow(ax - 1, start, width).copy_(updates[b].to(data.dtype))
    return data


def scatter_update(data, indices, updates, axis):
    return scatter_update_(data.clone(), indices, updates, axis)


def npu_scatter_nd_update_(input, indices, updates):
    """input[indices[i]] = updates[i] where each indices row addresses the leading axes."""
    op = "npu_scatter_nd_update_"
    require(indices.dim() >= 2, op, "indices must be at least 2-D")
    depth = indices.shape[-1]
    require(depth <= input.dim(), op, "indices.shape[-1] must not exceed the rank of input")
    want = tuple(indices.shape[:-1]) + tuple(input.shape[depth:])
    require(tuple(updates.shape) == want, op,
            f"updates.shape must be indices.shape[:-1] + input.shape[{depth}:] = {want}, "
            f"got {tuple(updates.shape)}")
    flat_idx = indices.reshape(-1, depth).long()
    for d in range(depth):
        require(bool(((flat_idx[:, d] >= 0) & (flat_idx[:, d] < input.shape[d])).all()), op,
                f"indices along axis {d} must lie in [0, {input.shape[d]})")
    flat_upd = updates.reshape(flat_idx.shape[0], *input.shape[depth:])
    input[tuple(flat_idx[:, d] for d in range(depth))] = flat_upd.to(input.dtype)
    return input


def npu_scatter_nd_update(input, indices, updates):
    return npu_scatter_nd_update_(input.clone(), indices, updates)


def _write_slots(op, cache, tokens, slots, nz):
    """tokens (T, N, D) into the paged cache at flat slot ids.

    ND cache: (num_blocks, block_size, N, D). NZ cache: (num_blocks, N*D/c, block_size, c).
    """
    num_blocks = cache.shape[0]
    block_size = cache.shape[2] if nz else cache.shape[1]
    require(len(set(slots)) == len(slots), op, "slot_mapping values must be unique")
    for t, slot in enumerate(slots):
        require(0 <= slot < num_blocks * block_size, op,
                f"slot_mapping values must lie in [0, {num_blocks * block_size - 1}] (got {slot})")
        blk, off = divmod(slot, block_size)
        row = tokens[t].to(cache.dtype)
        if nz:
            cache[blk, :, off, :] = row.reshape(cache.shape[1], cache.shape[3])
        else:
            cache[blk, off] = row.reshape(cache.shape[2:])


def npu_scatter_pa_kv_cache(key, value, key_cache, value_cache, slot_mapping, *,
                            compress_lens=None, compress_seq_offsets=None, seq_lens=None,
                            cache_mode='PA_NZ'):
    """Writes key/value [T, N, D] into paged caches in place; returns nothing."""
    op = "npu_scatter_pa_kv_cache"
    if key.dim() == 4 or compress_lens is not None:
        raise unsupported(op, "scenario 2 (compressed 4-D key/value with compress_lens)")
    require(key.dim() == 3 and value.dim() == 3, op, "key and value must be 3-D [T, N, D]")
    require(key.shape[:2] == value.shape[:2], op, "key and value must share their first two axes")
    require(key_cache.dim() == 4 and value_cache.dim() == 4, op, "caches must be 4-D")
    require(key.dtype == value.dtype == key_cache.dtype == value_cache.dtype, op,
            "key, value and the caches must share one dtype")
    require(cache_mode in ("PA_NZ", "Norm", None), op, "cache_mode must be 'PA_NZ', 'Norm' or None")
    slots = [int(s) for s in slot_mapping.reshape(-1).tolist()]
    require(len(slots) == key.shape[0], op, "slot_mapping must have one entry per token")
    nz = cache_mode == "PA_NZ"
    _write_slots(op, key_cache, key, slots, nz)
    _write_slots(op, value_cache, value, slots, nz)
