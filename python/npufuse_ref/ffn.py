"""Activations and FFN blocks: swiglu (plain, quantising, dequantising, clipped), gelu, ffn."""
import torch

from ._common import (INT4_MAX, INT8_MAX, f32, gelu_erf, gelu_tanh, pack_int4_to_int32,
                      quantize_symmetric_rows, require, round_half_even, unsupported)


def npu_swiglu(input, dim=-1):
    """silu(A) * B with A the first and B the second half of `input` along `dim`."""
    op = "npu_swiglu"
    require(1 <= input.dim() <= 8, op, "input must have 1 to 8 dims")
    require(input.shape[dim] % 2 == 0, op, f"the split axis {dim} must have even length")
    a, b = f32(input).chunk(2, dim=dim)
    return (torch.nn.functional.silu(a) * b).to(input.dtype)


def _swiglu_halves(x, activate_left):
    a, b = x.chunk(2, dim=-1)
    return torch.nn.functional.silu(a) * b if activate_left else a * torch.nn.functional.silu(b)


def _group_ranges(op, group_index, group_list_type, rows):
    """[(start, end)] per group from cumsum (type 0) or counts (type 1)."""
    values = [int(v) for v in group_index.reshape(-1).tolist()]
    if group_list_type == 1:
        ends, acc = [], 0
        for v in values:
            acc += v
            ends.append(acc)
    else:
        require(group_list_type == 0, op, "group_list_type must be 0 (cumsum) or 1 (count)")
        ends = values
    require(all(b >= a for a, b in zip([0] + ends[:-1], ends)), op, "group_index must be non-decreasing")
    require(not ends or ends[-1] <= rows, op, "group_index covers more rows than x has")
    return list(zip([0] + ends[:-1], ends))


def _quantise_rows(op, act, quant_mode, scales, offsets, ranges, dst_type):
    """Static (round(v * s + o)) or dynamic per-row quant of act (rows, N); rows outside groups stay 0."""
    packed = dst_type == torch.quint4x2
    qmax = INT4_MAX if packed else INT8_MAX
    rows = act.shape[0]
    q = torch.zeros_like(act)
    scale_out = torch.zeros(rows)
    for g, (a, b) in enumerate(ranges):
        v = act[a:b]
        s = scales[g] if scales is not None and scales.dim() >= 1 and scales.shape[0] == len(ranges) \
            else scales
        if s is not None:
            v = v * (s if s.dim() > 0 else s.reshape(1))
        if quant_mode == 1:
            q[a:b], scale_out[a:b] = quantize_symmetric_rows(v, qmax)
        else:
            require(quant_mode == 0, op, "quant_mode must be 0 (static) or 1 (dynamic)")
            o = offsets[g] if offsets is not None and offsets.dim() >= 1 and \
                offsets.shape[0] == len(ranges) else offsets
            q[a:b] = round_half_even(v + (o if o is not None else 0.0)).clamp(-qmax - 1, qmax)
    y = pack_int4_to_int32(q) if packed else q.to(torch.int8)
    return y, scale_out


def npu_swiglu_quant(x, *, smooth_scales=None, offsets=None, group_index=None, activate_left=False,
                     quant_mode=0, group_list_type=0, dst_type=None):
    """SwiGLU, smoothing by the group's smooth_scales row, then static or dynamic quant.

    Returns (y, scale); scale is the per-row dynamic scale (zeros for static quant).
    """
    op = "npu_swiglu_quant"
    require(x.dim() > 1, op, "x must have more than one dimension")
    require(x.shape[-1] % 2 == 0 and x.shape[-1] <= 8192, op,
            "the last axis of x must be even and <= 8192")
    require(dst_type in (None, torch.int8, torch.quint4x2), op, "dst_type must be int8 or int4")
    if quant_mode == 0:
        require(smooth_scales is not None, op, "static quant (quant_mode 0) needs smooth_scales")
    lead = x.shape[:-1]
    act = _swiglu_halves(f32(x).reshape(-1, x.shape[-1]), activate_left)
    rows = act.shape[0]
    ranges = _group_ranges(op, group_index, group_list_type, rows) if group_index is not None \
        else [(0, rows)]
    y, scale = _quantise_rows(op, act, quant_mode, f32(smooth_scales), f32(offsets), ranges, dst_type)
    return y.reshape(*lead, -1), scale.reshape(lead)


def _clipped_glu(glu, lin, alpha, limit, bias):
    glu = glu.clamp(max=limit)
    lin = lin.clamp(-limit, limit)
    return glu * torch.sigmoid(alpha * glu) * (lin + bias)


def npu_dequant_swiglu_quant(x, *, weight_scale=None, activation_scale=None, bias=None,
                             quant_scale=None, quant_offset=None, group_index=None,
                             activate_left=False, quant_mode=0, swiglu_mode=0, clamp_limit=7.0,
                             glu_alpha=1.702, glu_bias=1.0):
    """x * weight_scale * activation_scale -> SwiGLU (mode 0 halves, mode 1 clipped even/odd)
    -> optional smoothing by quant_scale -> quant (0 static: round(v + offset), 1 dynamic).

    group_index is a count list; each group uses its own weight_scale and quant_scale rows.
    """
    op = "npu_dequant_swiglu_quant"
    if bias is not None:
        raise unsupported(op, "bias")
    require(swiglu_mode in (0, 1), op, "swiglu_mode must be 0 or 1")
    v = f32(x).reshape(-1, x.shape[-1])
    rows = v.shape[0]
    ranges = _group_ranges(op, group_index, 1, rows) if group_index is not None else [(0, rows)]
    if weight_scale is not None:
        ws = f32(weight_scale).reshape(-1, x.shape[-1])
        for g, (a, b) in enumerate(ranges):
            v[a:b] = v[a:b] * ws[g if ws.shape[0] > 1 else 0]
    if activation_scale is not None:
        v = v * f32(activation_scale).reshape(-1, 1)
    if swiglu_mode == 0:
        act = _swiglu_halves(v, activate_left)
    else:
        act = _clipped_glu(v[:, 0::2], v[:, 1::2], glu_alpha, clamp_limit, glu_bias)
    qs = f32(quant_scale).reshape(-1, act.shape[-1]) if quant_scale is not None else None
    qo = f32(quant_offset).reshape(-1, act.shape[-1]) if quant_offset is not None else None
    if qs is not None and qs.shape[0] == 1:
        qs = qs[0]
    if qo is not None and qo.shape[0] == 1:
        qo = qo[0]
    y, scale = _quantise_rows(op, act, quant_mode, qs, qo, ranges, None)
    return y.reshape(*x.shape[:-1], -1), scale.reshape(x.shape[:-1])


def npu_clipped_swiglu(x, *, group_index=None, dim=-1, alpha=1.702, limit=7.0, bias=1.0,
                       interleaved=True):
    """GPT-OSS SwiGLU: A = clamp(A, max=limit), B = clamp(B, +-limit), A * sigmoid(alpha A) * (B + bias)."""
    op = "npu_clipped_swiglu"
    require(x.shape[dim] % 2 == 0, op, "the split axis must have even length")
    v = f32(x).movedim(dim, -1)
    if interleaved:
        glu, lin = v[..., 0::2], v[..., 1::2]
    else:
        glu, lin = v.chunk(2, dim=-1)
    out = _clipped_glu(glu, lin, alpha, limit, bias)
    if group_index is not None:
        rows = int(group_index.sum())
        flat = out.reshape(-1, out.shape[-1])
        flat[rows:] = 0
        out = flat.reshape(out.shape)
    return out.movedim(-1, dim).to(x.dtype)


def npu_gelu(input, approximate='none'):
    require(approximate in ("none", "tanh"), "npu_gelu", "approximate must be 'none' or 'tanh'")
    x = f32(input)
    return (gelu_erf(x) if approximate == "none" else gelu_tanh(x)).to(input.dtype)


def npu_fast_gelu(input):
    x = f32(input)
    return (x * torch.sigmoid(1.702 * x)).to(input.dtype)


def fast_gelu(self):
    return npu_fast_gelu(self)


def npu_silu(self):
    return torch.nn.functional.silu(f32(self)).to(self.dtype)


def npu_gelu_mul(input, *, approximate="none"):
    """GELU(first half) * second half of the last axis."""
    a, b = f32(input).chunk(2, dim=-1)
    g = gelu_erf(a) if approximate == "none" else gelu_tanh(a)
    return (g * b).to(input.dtype)


_FFN_PLAIN = {
    "relu": torch.relu,
    "silu": torch.nn.functional.silu,
    "gelu": gelu_tanh,
    "fastgelu": lambda v: v * torch.sigmoid(1.702 * v),
}
_FFN_GATED = {
    "swiglu": torch.nn.functional.silu,
    "geglu": gelu_tanh,
    "reglu": torch.relu,
}


def npu_ffn(x, weight1, weight2, activation, *, expert_tokens=None, expert_tokens_index=None,
            bias1=None, bias2=None, scale=None, offset=None, deq_scale1=None, deq_scale2=None,
            antiquant_scale1=None, antiquant_scale2=None, antiquant_offset1=None,
            antiquant_offset2=None, inner_precise=None, output_dtype=None):
    """y = act(x W1 + b1) W2 + b2; gated activations use [gate | up] halves of x W1 + b1.

    With expert_tokens (per-expert row counts), consecutive rows go to consecutive experts.
    "gelu"/"geglu" use the tanh approximation.
    """
    op = "npu_ffn"
    for name, value in (("scale", scale), ("offset", offset), ("deq_scale1", deq_scale1),
                        ("deq_scale2", deq_scale2), ("antiquant_scale1", antiquant_scale1),
                        ("antiquant_scale2", antiquant_scale2), ("expert_tokens_index",
                                                                 expert_tokens_index)):
        if value is not None:
            raise unsupported(op, name)
    require(activation in _FFN_PLAIN or activation in _FFN_GATED, op,
            "activation must be fastgelu, gelu, relu, silu, geglu, swiglu or reglu")
    gated = activation in _FFN_GATED
    if gated:
        require(expert_tokens is None, op, "geglu/swiglu/reglu do not support expert_tokens")
    xf = f32(x).reshape(-1, x.shape[-1])

    def block(rows, w1, w2, b1, b2):
        h = rows @ f32(w1)
        if b1 is not None:
            h = h + f32(b1)
        if gated:
            g, u = h.chunk(2, dim=-1)
            h = _FFN_GATED[activation](g) * u
        else:
            h = _FFN_PLAIN[activation](h)
        y = h @ f32(w2)
        return y + f32(b2) if b2 is not None else y

    if expert_tokens is None:
        out = block(xf, weight1, weight2, bias1, bias2)
    else:
        counts = [int(v) for v in (expert_tokens.tolist() if isinstance(expert_tokens, torch.Tensor)
                                   else expert_tokens)]
        require(len(counts) <= 256, op, "expert_tokens may hold at most 256 entries")
        out = torch.zeros(xf.shape[0], weight2.shape[-1])
        row = 0
        for e, n in enumerate(counts):
            b1 = bias1[e] if bias1 is not None else None
            b2 = bias2[e] if bias2 is not None else None
            out[row:row + n] = block(xf[row:row + n], weight1[e], weight2[e], b1, b2)
            row += n
    dtype = output_dtype or x.dtype
    return out.reshape(*x.shape[:-1], -1).to(dtype)
