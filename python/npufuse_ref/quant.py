"""Quantisation operators: dynamic quant, quantised matmuls, scale packing.

Integers are rounded half to even (the device's RINT mode) and saturated to the
target range. int4 results are packed eight per int32, lowest nibble first.
"""
import struct

import torch

from ._common import (INT4_MAX, INT8_MAX, f32, gelu_erf, gelu_tanh, pack_int4_to_int32,
                      quantize_symmetric_rows, require, round_half_even, unpack_int32_to_int4,
                      unsupported)


def _dst_max(op, dst_type):
    if dst_type is None or dst_type == torch.int8:
        return INT8_MAX, False
    if dst_type == torch.quint4x2:
        return INT4_MAX, True
    raise unsupported(op, f"dst_type {dst_type}")


def _smooth_rows(op, x2d, smooth_scales, group_index):
    """x * smooth scale, with one scale row per group of rows when group_index is given."""
    if smooth_scales is None:
        return x2d
    s = f32(smooth_scales)
    if group_index is None:
        require(s.dim() == 1 and s.shape[0] == x2d.shape[-1], op,
                "without group_index, smooth_scales must be 1-D with the last axis size of x")
        return x2d * s
    ends = [int(v) for v in group_index.reshape(-1).tolist()]
    require(s.dim() == 2 and s.shape[1] == x2d.shape[-1], op,
            "with group_index, smooth_scales must be 2-D [G, H]")
    require(len(ends) == s.shape[0], op, "group_index must have one entry per smooth_scales row")
    require(all(b >= a for a, b in zip([0] + ends[:-1], ends)), op,
            "group_index must be monotonically increasing")
    require(ends[-1] == x2d.shape[0], op,
            f"the last group_index value ({ends[-1]}) must equal the number of rows ({x2d.shape[0]})")
    out = x2d.clone()
    for g, (a, b) in enumerate(zip([0] + ends[:-1], ends)):
        out[a:b] = x2d[a:b] * s[g]
    return out


def npu_dynamic_quant(x, *, smooth_scales=None, group_index=None, dst_type=None):
    """Per-token symmetric quant: scale = rowmax|x * s| / DTYPE_MAX, y = round(x * s / scale)."""
    op = "npu_dynamic_quant"
    require(x.dim() > 1, op, "x must have more than one dimension")
    dtype_max, packed = _dst_max(op, dst_type)
    if packed:
        require(x.shape[-1] % 8 == 0, op, "int4 output needs the last axis of x to be a multiple of 8")
    x2d = f32(x).reshape(-1, x.shape[-1])
    v = _smooth_rows(op, x2d, smooth_scales, group_index)
    q, scale = quantize_symmetric_rows(v, dtype_max)
    q = q.reshape(x.shape)
    y = pack_int4_to_int32(q) if packed else q.to(torch.int8)
    return y, scale.reshape(x.shape[:-1])


def npu_dynamic_quant_asymmetric(x, *, smooth_scales=None, group_index=None, dst_type=None):
    """Per-token asymmetric quant; returns (y, scale, offset)."""
    op = "npu_dynamic_quant_asymmetric"
    dtype_max, packed = _dst_max(op, dst_type)
    dtype_min = -dtype_max - 1
    x2d = _smooth_rows(op, f32(x).reshape(-1, x.shape[-1]), smooth_scales, group_index)
    hi, lo = x2d.amax(dim=-1), x2d.amin(dim=-1)
    scale = (hi - lo) / (dtype_max - dtype_min)
    safe = torch.where(scale == 0, torch.ones_like(scale), scale)
    offset = dtype_max - hi / safe
    q = round_half_even(x2d / safe.unsqueeze(-1) + offset.unsqueeze(-1)).clamp(dtype_min, dtype_max)
    q = q.reshape(x.shape)
    y = pack_int4_to_int32(q) if packed else q.to(torch.int8)
    return y, scale.reshape(x.shape[:-1]), offset.reshape(x.shape[:-1])


def _float_bits(v):
    return struct.unpack("<I", struct.pack("<f", float(v)))[0]


def _bits_float(b):
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]


def npu_trans_quant_param(scale, offset=None, round_mode=0):
    """Packs float32 scales as FP19 into int64 (bit 46 set), offsets into bits 37-45.

    round_mode 1 rounds the dropped 13 mantissa bits to nearest instead of truncating.
    """
    op = "npu_trans_quant_param"
    require(round_mode in (0, 1), op, "round_mode must be 0 or 1")
    s = f32(scale).reshape(-1)
    if offset is not None:
        o = f32(offset).reshape(-1)
        n = max(s.numel(), o.numel())
        s = s.expand(n) if s.numel() == 1 else s
        o = o.expand(n) if o.numel() == 1 else o
    values = []
    for i, v in enumerate(s.tolist()):
        bits = _float_bits(v)
        if round_mode == 1:
            bits = min(bits + 0x1000, 0xFFFFFFFF)
        packed = (bits & 0xFFFFE000) | (1 << 46)
        if offset is not None:
            off = max(min(int(round(float(o[i]))), 255), -256)
            packed = (packed & 0x4000FFFFFFFF) | ((off & 0x1FF) << 37)
        values.append(packed)
    out = torch.tensor(values, dtype=torch.int64)
    return out.reshape(scale.shape) if offset is None else out


def decode_quant_param(packed):
    """float32 scales back from npu_trans_quant_param's int64 encoding (offset bits ignored)."""
    flat = [_bits_float(int(v) & 0xFFFFFFFF) for v in packed.reshape(-1).tolist()]
    return torch.tensor(flat, dtype=torch.float32).reshape(packed.shape)


def _int_operand(t):
    """int8 as is; int4 packed in int32 unpacked along the last axis."""
    if t.dtype == torch.int32:
        return unpack_int32_to_int4(t)
    return t.to(torch.int64)


def npu_quant_matmul(x1, x2, scale, *, offset=None, pertoken_scale=None, bias=None,
                     output_dtype=None, group_sizes=None):
    """out = (x1 @ x2 [+ int32 bias]) * scale [* pertoken_scale] + offset [+ float bias]."""
    op = "npu_quant_matmul"
    require(2 <= x1.dim() <= 6 and 2 <= x2.dim() <= 6, op, "x1 and x2 must have 2 to 6 dims")
    require(x1.shape[-1] <= 65535 and x2.shape[-1] <= 65535, op,
            "the last axis of x1 and of x2 must not exceed 65535")
    if group_sizes is not None:
        raise unsupported(op, "group_sizes (per-group quantisation)")
    a, b = _int_operand(x1), _int_operand(x2)
    require(a.shape[-1] == b.shape[-2], op, f"inner dims differ: {a.shape[-1]} vs {b.shape[-2]}")
    acc = (a @ b).to(torch.float64)
    int_bias = bias is not None and bias.dtype == torch.int32
    if int_bias:
        acc = acc + bias.to(torch.float64)
    s = decode_quant_param(scale) if scale.dtype == torch.int64 else f32(scale)
    y = acc.to(torch.float32) * s.reshape(-1)
    if pertoken_scale is not None:
        require(output_dtype in (torch.float16, torch.bfloat16), op,
                "pertoken_scale needs output_dtype float16 or bfloat16")
        y = y * f32(pertoken_scale).unsqueeze(-1)
    if offset is not None:
        y = y + f32(offset).reshape(-1)
    if bias is not None and not int_bias:
        y = y + f32(bias)
    dtype = torch.int8 if output_dtype is None else output_dtype
    if dtype == torch.int8:
        return round_half_even(y).clamp(-128, 127).to(torch.int8)
    if dtype == torch.int32:
        return acc.to(torch.int32)
    return y.to(dtype)


def _expand_groups(param, k, group_size):
    """(ceil(K/g), N) per-group parameters repeated to (K, N)."""
    return param.repeat_interleave(group_size, dim=0)[:k]


def npu_weight_quant_batchmatmul(x, weight, antiquant_scale, antiquant_offset=None, quant_scale=None,
                                 quant_offset=None, bias=None, antiquant_group_size=0,
                                 inner_precise=0):
    """y = x @ ((weight + antiquant_offset) * antiquant_scale) + bias."""
    op = "npu_weight_quant_batchmatmul"
    w = f32(_int_operand(weight)) if weight.dtype in (torch.int8, torch.int32) else f32(weight)
    k, n = w.shape[-2], w.shape[-1]
    require(1 <= k <= 65535 and 1 <= n <= 65535, op, "K and N must lie in [1, 65535]")
    scale, off = f32(antiquant_scale), f32(antiquant_offset)
    if antiquant_group_size:
        g = antiquant_group_size
        require(g % 32 == 0 and 32 <= g <= k - 1, op,
                "antiquant_group_size must be a multiple of 32 in [32, K - 1]")
        scale = _expand_groups(scale, k, g)
        off = _expand_groups(off, k, g) if off is not None else None
    else:
        scale = scale.reshape(-1) if scale.numel() in (1, n) else scale
        off = off.reshape(-1) if off is not None and off.numel() in (1, n) else off
    if off is not None:
        w = w + off
    y = f32(x) @ (w * scale)
    if bias is not None:
        y = y + f32(bias)
    if quant_scale is not None:
        s = decode_quant_param(quant_scale) if quant_scale.dtype == torch.int64 else f32(quant_scale)
        y = y * s.reshape(-1)
        if quant_offset is not None:
            y = y + f32(quant_offset).reshape(-1)
        return round_half_even(y).clamp(-128, 127).to(torch.int8)
    return y.to(x.dtype)


def npu_anti_quant(x, scale, *, offset=None, dst_dtype=None, src_dtype=None):
    """(x + offset) * scale in dst_dtype (float16 by default)."""
    v = f32(_int_operand(x)) if x.dtype in (torch.int8, torch.int32) else f32(x)
    if offset is not None:
        v = v + f32(offset)
    return (v * f32(scale)).to(dst_dtype or torch.float16)


def npu_quantize(input, scales, zero_points, dtype, axis=1, div_mode=True):
    """input / scales + zero_points (div_mode) or input * scales + zero_points, rounded."""
    op = "npu_quantize"
    v = f32(input)
    shape = [1] * v.dim()
    s = f32(scales)
    if s.numel() > 1:
        shape[axis % v.dim()] = s.numel()
        s = s.reshape(shape)
    q = v / s if div_mode else v * s
    if zero_points is not None:
        z = f32(zero_points)
        q = q + (z.reshape(shape) if z.numel() > 1 else z)
    q = round_half_even(q)
    if dtype == torch.quint8:
        return q.clamp(0, 255).to(torch.uint8)
    if dtype == torch.qint8:
        return q.clamp(-128, 127).to(torch.int8)
    if dtype == torch.quint4x2:
        return pack_int4_to_int32(q.clamp(-8, 7))
    if dtype == torch.int32:
        return q.to(torch.int32)
    raise unsupported(op, f"dtype {dtype}")


def npu_group_quant(x, scale, group_index, *, offset=None, dst_dtype=None):
    """Static per-group quant: rows of group g use scale[g]: y = round(x * scale[g] + offset)."""
    op = "npu_group_quant"
    require(x.dim() == 2 and scale.dim() == 2 and scale.shape[1] == x.shape[1], op,
            "x must be [S, H] and scale [G, H]")
    ends = [int(v) for v in group_index.reshape(-1).tolist()]
    require(len(ends) == scale.shape[0], op, "group_index needs one entry per scale row")
    require(all(b >= a for a, b in zip([0] + ends[:-1], ends)) and ends[-1] == x.shape[0], op,
            "group_index must be non-decreasing cumulative row ends ending at S")
    v = f32(x).clone()
    for g, (a, b) in enumerate(zip([0] + ends[:-1], ends)):
        v[a:b] = v[a:b] * f32(scale[g])
    if offset is not None:
        require(offset.numel() == 1, op, "offset must hold a single value")
        v = v + float(offset.reshape(-1)[0])
    packed = dst_dtype == torch.quint4x2
    if packed:
        return pack_int4_to_int32(round_half_even(v).clamp(-8, 7))
    require(dst_dtype in (None, torch.int8), op, "dst_dtype must be int8 or quint4x2")
    return round_half_even(v).clamp(-128, 127).to(torch.int8)


def npu_dynamic_block_quant(x, *, min_scale=0.0, round_mode="rint", dst_type=1, row_block_size=1,
                            col_block_size=128):
    """Per-block int8 quant; returns (y, scale) with scale = max(block max|x| / 127, min_scale).

    The returned scale is the dequantisation factor (y * scale ~ x), as in the doc example;
    scale has shape (rows / row_block_size, ceil(cols / col_block_size)).
    """
    op = "npu_dynamic_block_quant"
    require(dst_type == 1, op, "only dst_type=1 (int8) is supported")
    require(row_block_size == 1 and col_block_size == 128, op,
            "only row_block_size=1 and col_block_size=128 are supported")
    require(round_mode == "rint", op, "only round_mode='rint' is supported")
    require(x.dim() in (2, 3), op, "x must be 2-D or 3-D")
    v = f32(x)
    cols = v.shape[-1]
    blocks = -(-cols // col_block_size)
    pad = blocks * col_block_size - cols
    padded = torch.nn.functional.pad(v, (0, pad))
    tiles = padded.reshape(*v.shape[:-1], blocks, col_block_size)
    scale = (tiles.abs().amax(dim=-1) / INT8_MAX).clamp(min=float(min_scale))
    safe = torch.where(scale == 0, torch.ones_like(scale), scale)
    q = round_half_even(tiles / safe.unsqueeze(-1)).clamp(-128, 127)
    y = q.reshape(*v.shape[:-1], blocks * col_block_size)[..., :cols].to(torch.int8)
    return y, scale


def npu_quant_matmul_gelu(x1, x2, x1_scale, x2_scale, *, bias=None, approximate="gelu_erf"):
    """gelu((x1 @ x2 [+ int32 bias]) * x2_scale * x1_scale [+ float bias])."""
    op = "npu_quant_matmul_gelu"
    require(approximate in ("gelu_erf", "gelu_tanh"), op, "approximate must be gelu_erf or gelu_tanh")
    acc = (_int_operand(x1) @ _int_operand(x2)).to(torch.float64)
    int_bias = bias is not None and bias.dtype == torch.int32
    if int_bias:
        acc = acc + bias.to(torch.float64)
    y = acc.to(torch.float32) * f32(x2_scale).reshape(-1) * f32(x1_scale).reshape(-1, 1)
    if bias is not None and not int_bias:
        y = y + f32(bias)
    y = gelu_erf(y) if approximate == "gelu_erf" else gelu_tanh(y)
    bf16 = x2_scale.dtype == torch.bfloat16 or (bias is not None and bias.dtype == torch.bfloat16)
    return y.to(torch.bfloat16 if bf16 else torch.float16)
