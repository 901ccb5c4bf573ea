"""Layout handling for the attention operators.

Every batch is brought to per-batch (N, S, D) float32 tensors, and results go back
into the output layout named right of the '_' in input_layout (or the input
layout itself when there is no '_').
"""
import torch

from ._common import ConstraintError, as_int_list, ceil_div, f32, require

INPUT_LAYOUTS = ("BSH", "BSND", "BNSD", "TND", "NTD")
LAYOUT_PAIRS = {
    "BSH": ("BSH", "BSH"), "BSND": ("BSND", "BSND"), "BNSD": ("BNSD", "BNSD"),
    "TND": ("TND", "TND"), "NTD": ("NTD", "NTD"),
    "BNSD_BSND": ("BNSD", "BSND"), "BSH_NBSD": ("BSH", "NBSD"), "BSND_NBSD": ("BSND", "NBSD"),
    "BNSD_NBSD": ("BNSD", "NBSD"), "TND_NTD": ("TND", "NTD"), "NTD_TND": ("NTD", "TND"),
    "BSH_BNSD": ("BSH", "BNSD"), "BSND_BNSD": ("BSND", "BNSD"),
}


def split_layout(op, input_layout):
    if input_layout not in LAYOUT_PAIRS:
        raise ConstraintError(op, f"input_layout {input_layout!r} is not one of "
                                  f"{sorted(LAYOUT_PAIRS)}")
    return LAYOUT_PAIRS[input_layout]


def is_token_layout(layout):
    return layout in ("TND", "NTD")


def cumulative_bounds(op, name, cum, total):
    """Checks cumulative lengths and returns [(start, end)] per batch."""
    require(cum is not None, op, f"{name} is required for TND/NTD layouts")
    require(len(cum) <= 4096, op, f"{name} may have at most 4096 entries")
    prev = 0
    bounds = []
    for v in cum:
        require(v >= prev, op, f"{name} must be cumulative (non-decreasing, non-negative): {cum}")
        bounds.append((prev, v))
        prev = v
    require(prev == total, op, f"the last element of {name} ({prev}) must equal T ({total}): "
                               "TND lengths are cumulative and include padding tokens")
    return bounds


def heads_dim(op, t, layout, heads):
    """(N, D) of a tensor in an input layout."""
    if layout == "BSH":
        require(t.dim() == 3, op, "BSH tensors must be 3-D")
        require(t.shape[-1] % heads == 0, op, f"H ({t.shape[-1]}) must be divisible by N ({heads})")
        return heads, t.shape[-1] // heads
    if layout == "BSND":
        require(t.dim() == 4, op, "BSND tensors must be 4-D")
        return t.shape[2], t.shape[3]
    if layout == "BNSD":
        require(t.dim() == 4, op, "BNSD tensors must be 4-D")
        return t.shape[1], t.shape[3]
    if layout == "TND":
        require(t.dim() == 3, op, "TND tensors must be 3-D")
        return t.shape[1], t.shape[2]
    require(t.dim() == 3, op, "NTD tensors must be 3-D")
    return t.shape[0], t.shape[2]


def to_bnsd(t, layout, heads):
    """Dense B-layouts to a float32 (B, N, S, D) tensor."""
    x = f32(t)
    if layout == "BSH":
        b, s, h = x.shape
        return x.reshape(b, s, heads, h // heads).permute(0, 2, 1, 3)
    if layout == "BSND":
        return x.permute(0, 2, 1, 3)
    return x


def token_slices(t, layout, bounds):
    """TND/NTD to a list of float32 (N, s_b, D) tensors."""
    x = f32(t)
    if layout == "TND":
        x = x.permute(1, 0, 2)
    return [x[:, a:b] for a, b in bounds]


def per_batch_lengths(op, name, values, batch, full):
    """Per-batch valid lengths of a dense layout: one value broadcasts, extra values are ignored."""
    if values is None:
        return [full] * batch
    vals = as_int_list(values)
    if len(vals) == 1:
        vals = vals * batch
    require(len(vals) >= batch, op, f"{name} must have 1 or at least B ({batch}) entries")
    vals = vals[:batch]
    for v in vals:
        require(0 <= v <= full, op, f"{name} entries must lie in [0, {full}] (got {v})")
    return vals


def paged_cache_bnsd(op, cache, kv_heads, block_size):
    """A paged cache as float32 (blocknum, KV_N, blocksize, D).

    Accepted forms: (blocknum, blocksize, H), (blocknum, KV_N, blocksize, D), the NZ form
    (blocknum, KV_N, D/c, blocksize, c) read back to its logical layout, and the
    (blocknum, blocksize, KV_N, D) caches that mla_prolog / kv_rmsnorm_rope_cache write
    (their NZ storage is a 4-D tensor to torch; recognised when axis 2, not axis 1, is KV_N).
    """
    x = f32(cache)
    if x.dim() == 3:
        n, bs, h = x.shape
        require(h % kv_heads == 0, op, "paged cache H must be divisible by KV_N")
        x = x.reshape(n, bs, kv_heads, h // kv_heads).permute(0, 2, 1, 3)
    elif x.dim() == 5:
        n, kvn, d1, bs, c = x.shape
        x = x.permute(0, 1, 3, 2, 4).reshape(n, kvn, bs, d1 * c)
    else:
        require(x.dim() == 4, op, "paged caches must be 3-D, 4-D or 5-D (NZ)")
        if x.shape[1] != kv_heads and x.shape[2] == kv_heads:
            x = x.permute(0, 2, 1, 3)
    require(x.shape[1] == kv_heads, op, f"paged cache KV_N ({x.shape[1]}) must be {kv_heads}")
    if block_size:
        require(x.shape[2] == block_size, op,
                f"block_size ({block_size}) must equal the cache block axis ({x.shape[2]})")
    return x


def gather_paged(cache_bnsd, block_table, batch, length):
    """The first `length` tokens of one sequence as (KV_N, length, D)."""
    bs = cache_bnsd.shape[2]
    n_blocks = ceil_div(length, bs)
    ids = block_table[batch, :n_blocks].long()
    blocks = cache_bnsd[ids]  # (n, KV_N, bs, D)
    seq = blocks.permute(1, 0, 2, 3).reshape(cache_bnsd.shape[1], n_blocks * bs, -1)
    return seq[:, :length]


def assemble_dense(outputs, batch, heads, seq, dv, out_layout):
    """Per-batch (N, s_b, Dv) results to the dense output layout, padding rows with zeros."""
    full = torch.zeros(batch, heads, seq, dv, dtype=torch.float32)
    for b, o in enumerate(outputs):
        full[b, :, :o.shape[1]] = o
    if out_layout == "BNSD":
        return full
    if out_layout == "BSND":
        return full.permute(0, 2, 1, 3).contiguous()
    if out_layout == "BSH":
        return full.permute(0, 2, 1, 3).reshape(batch, seq, heads * dv)
    if out_layout == "NBSD":
        return full.permute(1, 0, 2, 3).contiguous()
    raise AssertionError(out_layout)


def assemble_tokens(outputs, out_layout):
    ntd = torch.cat(outputs, dim=1)
    return ntd if out_layout == "NTD" else ntd.permute(1, 0, 2).contiguous()
