"""Rotary position embedding operators."""
import torch

from ._common import (deinterleave, f32, require, rotate_half, rotate_interleaved, unsupported)

_ROTATE = {"half": rotate_half, "interleave": rotate_interleaved}


def npu_rotary_mul(input, r1, r2, rotary_mode='half', rotate=None):
    """out = x * r1 + rotate(x) * r2 with r1 = cos and r2 = sin broadcast to x."""
    op = "npu_rotary_mul"
    require(input.dim() in (3, 4), op, "input must be 3-D or 4-D")
    require(rotary_mode in _ROTATE, op, "rotary_mode must be 'half' or 'interleave'")
    d = input.shape[-1]
    require(d % 2 == 0 and d < 896, op, f"D must be even and < 896 (got {d})")
    x = f32(input)
    if rotate is not None:
        rotated = x @ f32(rotate)
    else:
        rotated = _ROTATE[rotary_mode](x)
    out = x * f32(r1) + rotated * f32(r2)
    return out.to(input.dtype)


def _check_apply_rope_shapes(op, query, key, cos, sin, layout):
    if layout == "BSND":
        require(query.dim() == 4 and key.dim() == 4, op, "layout BSND needs 4-D query and key")
        want = (query.shape[0], query.shape[1], 1, cos.shape[-1])
        require(tuple(cos.shape) == want and tuple(sin.shape) == want, op,
                f"cos/sin must be (B, S, 1, D) = {want} for BSND")
    elif layout == "TND":
        require(query.dim() == 3 and key.dim() == 3, op, "layout TND needs 3-D query and key")
        want = (query.shape[0], 1, cos.shape[-1])
        require(tuple(cos.shape) == want and tuple(sin.shape) == want, op,
                f"cos/sin must be (T, 1, D) = {want} for TND")
    else:
        raise unsupported(op, f"layout {layout!r}: A2/A3 support only BSND and TND "
                              "(SBND/BNSD exist only on Ascend 950)")
    dq, dk, dc = query.shape[-1], key.shape[-1], cos.shape[-1]
    require(dq == dk == dc and dq in (64, 128), op,
            f"D of query, key and cos/sin must be equal and 64 or 128 (got {dq}, {dk}, {dc})")
    require(query.dtype == key.dtype == cos.dtype == sin.dtype, op,
            "query, key, cos and sin must share one dtype")


def npu_apply_rotary_pos_emb(query, key, cos, sin, *, layout='BSND', rotary_mode='half'):
    """Half-mode RoPE applied to query and key in place; returns (query, key)."""
    op = "npu_apply_rotary_pos_emb"
    if layout not in ("BSND", "TND"):
        raise ValueError(f"{op}: constraint violated: layout must be 'BSND' or 'TND' on A2/A3 "
                         f"(got {layout!r})")
    require(rotary_mode == "half", op, "only rotary_mode='half' is supported on A2/A3")
    _check_apply_rope_shapes(op, query, key, cos, sin, layout)
    c, s = f32(cos), f32(sin)
    for t in (query, key):
        x = f32(t)
        t.copy_((x * c + rotate_half(x) * s).to(t.dtype))
    return query, key


def npu_interleave_rope(x, cos, sin):
    """De-interleaves the last axis of x (even elements first), then applies half-mode RoPE."""
    op = "npu_interleave_rope"
    require(x.dim() == 4 and cos.dim() == 4 and sin.dim() == 4, op,
            "x, cos and sin must be 4-D (B, N, S, D)")
    require(x.shape[-1] == 64, op, f"D must be 64 (got {x.shape[-1]})")
    require(cos.shape[-1] == 64 and sin.shape[-1] == 64, op, "cos/sin D must be 64")
    require(cos.shape[1] == 1 and sin.shape[1] == 1, op, "cos/sin N must be 1")
    require(cos.shape[2] in (1, x.shape[2]), op, "cos/sin S must be 1 or the S of x")
    q = deinterleave(f32(x))
    out = q * f32(cos) + rotate_half(q) * f32(sin)
    return out.to(x.dtype)


def _mrope_cos_sin(op, positions, cache, mrope_section, cache_mode):
    """Per-token cos/sin halves of width rotary_dim / 2."""
    half = cache.shape[-1] // 2
    if positions.dim() == 1:
        rows = f32(cache)[positions.long()]
        return rows[..., :half], rows[..., half:]
    require(mrope_section is not None, op, "2-D positions need mrope_section")
    require(sum(mrope_section) == half, op, "sum(mrope_section) must equal rotary_dim / 2")
    require(positions.shape[0] == len(mrope_section), op,
            "positions.shape[0] must equal len(mrope_section)")
    if cache_mode != "default":
        raise unsupported(op, f"cache_mode={cache_mode!r}")
    rows = f32(cache)[positions.long()]
    cos_full, sin_full = rows[..., :half], rows[..., half:]
    cos_parts, sin_parts, start = [], [], 0
    for axis, width in enumerate(mrope_section):
        cos_parts.append(cos_full[axis, :, start:start + width])
        sin_parts.append(sin_full[axis, :, start:start + width])
        start += width
    return torch.cat(cos_parts, dim=-1), torch.cat(sin_parts, dim=-1)


def _mrope_apply(x, cos, sin, head_size, rotary_mode):
    tokens = x.shape[0]
    heads = x.reshape(tokens, -1, head_size)
    rot_dim = cos.shape[-1] * 2
    rot, tail = heads[..., :rot_dim], heads[..., rot_dim:]
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    if rotary_mode == "half":
        c2, s2 = torch.cat((c, c), -1), torch.cat((s, s), -1)
        out = rot * c2 + rotate_half(rot) * s2
    else:
        c2 = c.repeat_interleave(2, dim=-1)
        s2 = s.repeat_interleave(2, dim=-1)
        out = rot * c2 + rotate_interleaved(rot) * s2
    return torch.cat((out, tail), dim=-1).reshape(x.shape)


def npu_mrope(positions, query, key, cos_sin_cache, head_size, *, mrope_section=None,
              rotary_mode='half', cache_mode='default'):
    """cos, sin = cos_sin_cache[positions] split in halves; rotates the first rotary_dim of each head."""
    op = "npu_mrope"
    require(rotary_mode in ("half", "interleaved"), op,
            "rotary_mode must be 'half' or 'interleaved'")
    rotary_dim = cos_sin_cache.shape[-1]
    require(rotary_dim <= head_size, op, "rotary_dim must not exceed head_size")
    align = 16 if query.dtype == torch.float32 else 32
    require(head_size % align == 0 and rotary_dim % align == 0, op,
            f"head_size and rotary_dim must be multiples of {align} for {query.dtype}")
    if mrope_section is not None and all(v == 0 for v in mrope_section):
        mrope_section = None
    cos, sin = _mrope_cos_sin(op, positions, cos_sin_cache, mrope_section, cache_mode)
    q = _mrope_apply(f32(query), cos, sin, head_size, rotary_mode)
    k = _mrope_apply(f32(key), cos, sin, head_size, rotary_mode)
    return q.to(query.dtype), k.to(key.dtype)
