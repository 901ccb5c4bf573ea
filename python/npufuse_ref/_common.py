"""Shared helpers: constraint errors, float32 compute, small numeric kernels.

Every operator computes in float32 and casts back to the dtype the device would
return, so a reference result differs from the device only by rounding order.
"""
import math

import torch

INT8_MAX = 127.0
INT4_MAX = 7.0


class ConstraintError(ValueError):
    """An input breaks a hard constraint that the operator documentation states.

    It is a ValueError so that callers can catch either; the message starts
    with the operator name and quotes the violated rule.
    """

    def __init__(self, op, rule):
        super().__init__(f"{op}: constraint violated: {rule}")
        self.op = op
        self.rule = rule


def unsupported(op, what):
    """A documented mode that this reference does not model."""
    return NotImplementedError(f"{op}: not modelled by the CPU reference: {what}")


def require(cond, op, rule):
    if not cond:
        raise ConstraintError(op, rule)


def f32(t):
    return None if t is None else t.to(torch.float32)


def as_int_list(values):
    """Lists of ints arrive as Python lists, tuples or tensors."""
    if values is None:
        return None
    if isinstance(values, torch.Tensor):
        return [int(v) for v in values.reshape(-1).tolist()]
    return [int(v) for v in values]


def rms_norm_f32(x, gamma, eps, axes=1):
    """x / sqrt(mean(x^2 over the last `axes` axes) + eps) * gamma, all in float32.

    Returns (y, rstd) with rstd keeping the normalised axes as size 1.
    """
    x = f32(x)
    dims = tuple(range(x.dim() - axes, x.dim()))
    rstd = torch.rsqrt(x.pow(2).mean(dim=dims, keepdim=True) + eps)
    y = x * rstd
    if gamma is not None:
        y = y * f32(gamma)
    return y, rstd


def rotate_half(x):
    """cat(-x2, x1) with x1, x2 the two halves of the last axis (NeoX style)."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotate_interleaved(x):
    """Pairs (x0, x1), (x2, x3), ... rotate to (-x1, x0), (-x3, x2), ... (GPT-J style)."""
    even = x[..., 0::2]
    odd = x[..., 1::2]
    return torch.stack((-odd, even), dim=-1).flatten(-2)


def deinterleave(x):
    """Even elements first, then odd ones: (B, N, S, D) -> same shape, permuted last axis."""
    return torch.cat((x[..., 0::2], x[..., 1::2]), dim=-1)


def round_half_even(x):
    """torch.round rounds halves to even, like the device's CAST_RINT mode."""
    return torch.round(x)


def quantize_symmetric_rows(x, dtype_max=INT8_MAX):
    """Per-row symmetric quantisation of a float32 tensor along its last axis.

    Returns (q as float32 holding integers, scale float32 with the last axis removed).
    An all-zero row gets scale 0 and q 0.
    """
    amax = x.abs().amax(dim=-1)
    scale = amax / dtype_max
    safe = torch.where(scale == 0, torch.ones_like(scale), scale)
    q = round_half_even(x / safe.unsqueeze(-1)).clamp(-dtype_max - 1, dtype_max)
    q = torch.where(scale.unsqueeze(-1) == 0, torch.zeros_like(q), q)
    return q, scale


def pack_int4_to_int32(q):
    """Eight signed int4 values along the last axis go into one int32, lowest nibble first."""
    require(q.shape[-1] % 8 == 0, "int4 packing", "last axis must be a multiple of 8")
    nib = (q.to(torch.int64) & 0xF).reshape(*q.shape[:-1], q.shape[-1] // 8, 8)
    shifts = torch.arange(8, dtype=torch.int64) * 4
    packed = (nib << shifts).sum(dim=-1)
    packed = torch.where(packed >= 2 ** 31, packed - 2 ** 32, packed)
    return packed.to(torch.int32)


def unpack_int32_to_int4(packed):
    """Inverse of pack_int4_to_int32: int32 (..., n) -> int8-valued int64 (..., 8n)."""
    p = packed.to(torch.int64) & 0xFFFFFFFF
    shifts = torch.arange(8, dtype=torch.int64) * 4
    nib = (p.unsqueeze(-1) >> shifts) & 0xF
    nib = torch.where(nib >= 8, nib - 16, nib)
    return nib.reshape(*packed.shape[:-1], packed.shape[-1] * 8)


def is_power_of_two(n):
    return n > 0 and (n & (n - 1)) == 0


def ceil_div(a, b):
    return -(-a // b)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


def gelu_erf(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
