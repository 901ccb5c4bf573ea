"""npu_grouped_matmul: y_i = x_i @ weight_i (+ bias_i) per group, m-axis grouping for MoE.

Modelled: group_type None/-1 (pairwise lists) and 0 (m-axis groups given by group_list as
cumsum (type 0), counts (type 1) or [[expert, count], ...] (type 2)); split_item 0-3;
float inputs, int8 per-channel/per-token quantisation with float or npu_trans_quant_param
(int64) scales, weight-only fake quantisation, act_type 0/1/2/4/5.
"""
import torch

from ._common import f32, gelu_tanh, quantize_symmetric_rows, require, round_half_even, unsupported
from .quant import decode_quant_param

_ACTIVATIONS = {
    0: lambda v: v,
    1: torch.relu,
    2: gelu_tanh,
    4: lambda v: v * torch.sigmoid(1.702 * v),
    5: lambda v: v * torch.sigmoid(v),
}


def _as_list(value):
    if value is None:
        return None
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _weights(weight):
    """A list of 2-D (K, N) weights from a list of 2-D or 3-D tensors."""
    out = []
    for w in _as_list(weight):
        out.extend(list(w) if w.dim() == 3 else [w])
    return out


def _per_group(values, count):
    """Optional per-group parameters given as a list or as one stacked tensor."""
    if values is None:
        return [None] * count
    items = _as_list(values)
    if len(items) == 1 and items[0].dim() >= 1 and items[0].shape[0] == count and count > 1:
        return list(items[0])
    if len(items) == 1 and count > 1:
        return [items[0]] * count
    if len(items) == 1 and count == 1 and items[0].dim() >= 2 and items[0].shape[0] == 1:
        return [items[0][0]]
    return items


def _group_sizes(op, group_list, group_list_type, groups):
    """[(weight index, rows)] in row order."""
    if isinstance(group_list, (list, tuple)):
        ends = [int(v) for v in group_list]
        require(all(b > a for a, b in zip([0] + ends[:-1], ends)), op,
                "a list group_list must be strictly increasing")
        return list(enumerate(b - a for a, b in zip([0] + ends[:-1], ends)))
    require(group_list.dtype == torch.int64, op, f"a tensor group_list must be int64 (got {group_list.dtype})")
    gl = group_list.long()
    if group_list_type == 0:
        ends = gl.reshape(-1).tolist()
        require(all(b >= a for a, b in zip([0] + ends[:-1], ends)), op,
                "group_list (group_list_type 0) must be a non-decreasing cumsum")
        return list(enumerate(b - a for a, b in zip([0] + ends[:-1], ends)))
    if group_list_type == 1:
        sizes = gl.reshape(-1).tolist()
        require(all(s >= 0 for s in sizes), op, "group_list (group_list_type 1) must be non-negative counts")
        return list(enumerate(sizes))
    require(group_list_type == 2, op, "group_list_type must be 0 (cumsum), 1 (count) or 2 (pairs)")
    require(gl.dim() == 2 and gl.shape[1] == 2, op, "group_list_type 2 needs group_list of shape [E, 2]")
    pairs = [(int(i), int(n)) for i, n in gl.tolist()]
    require(all(0 <= i < groups for i, n in pairs if n > 0), op, "group index out of range")
    return pairs


def _one_matmul(x, w, bias, scale, offset, antiquant_scale, antiquant_offset, per_token_scale):
    if antiquant_scale is not None:
        wf = f32(w)
        if antiquant_offset is not None:
            wf = wf + f32(antiquant_offset)
        y = f32(x) @ (wf * f32(antiquant_scale))
        return y + f32(bias) if bias is not None else y
    if scale is None:
        y = f32(x) @ f32(w)
        return y + f32(bias) if bias is not None else y
    acc = x.to(torch.int64) @ w.to(torch.int64) if not x.is_floating_point() else f32(x) @ f32(w)
    acc = acc.to(torch.float32)
    int_bias = bias is not None and not bias.is_floating_point()
    if int_bias:
        acc = acc + bias.to(torch.float32)
    s = decode_quant_param(scale) if scale.dtype in (torch.int64,) else f32(scale)
    y = acc * s
    if per_token_scale is not None:
        y = y * f32(per_token_scale).reshape(-1, 1)
    if offset is not None:
        y = y + f32(offset)
    if bias is not None and not int_bias:
        y = y + f32(bias)
    return y


def _finish(op, y, x_dtype, output_dtype, quantised):
    dtype = output_dtype if output_dtype is not None else x_dtype
    if dtype == torch.int8:
        return round_half_even(y).clamp(-128, 127).to(torch.int8)
    return y.to(dtype)


def npu_grouped_matmul(x, weight, *, bias=None, scale=None, offset=None, antiquant_scale=None,
                       antiquant_offset=None, per_token_scale=None, group_list=None,
                       activation_input=None, activation_quant_scale=None,
                       activation_quant_offset=None, split_item=0, group_type=None,
                       group_list_type=0, act_type=0, output_dtype=None, tuning_config=None):
    """Returns a list of tensors: one per group (split_item 0/1) or a single one (2/3)."""
    op = "npu_grouped_matmul"
    require(split_item in (0, 1, 2, 3), op, "split_item must be 0, 1, 2 or 3")
    require(act_type in _ACTIVATIONS, op, "act_type must be 0, 1, 2, 4 or 5 (3 is not supported)")
    if activation_input is not None or activation_quant_scale is not None \
            or activation_quant_offset is not None:
        raise unsupported(op, "activation_input / activation_quant_* (reserved)")
    if group_type == 2:
        raise unsupported(op, "group_type 2 (k-axis grouping)")
    xs, ws = _as_list(x), _weights(weight)
    require(len(xs) <= 128 and len(ws) <= 128, op, "x and weight lists hold at most 128 tensors")
    for w in ws:
        require(w.shape[-1] < 65536 and w.shape[-2] < 65536, op, "inner dims must be < 65536")
    count = len(ws)
    biases, scales, offsets = (_per_group(bias, count), _per_group(scale, count),
                               _per_group(offset, count))
    aq_scales, aq_offsets = _per_group(antiquant_scale, count), _per_group(antiquant_offset, count)
    act = _ACTIVATIONS[act_type]
    quantised = scale is not None

    if group_type in (None, -1) and group_list is None and len(xs) == count:
        pts = _per_group(per_token_scale, count)
        ys = [act(_one_matmul(xs[g], ws[g], biases[g], scales[g], offsets[g], aq_scales[g],
                              aq_offsets[g], pts[g])) for g in range(count)]
        ys = [_finish(op, y, xs[0].dtype, output_dtype, quantised) for y in ys]
        return [torch.cat(ys, dim=0)] if split_item in (2, 3) else ys

    require(group_list is not None, op, "m-axis grouping needs group_list")
    xcat = torch.cat(xs, dim=0) if len(xs) > 1 else xs[0]
    require(xcat.dim() == 2, op, "grouped x must be 2-D [M, K]")
    if group_list_type == 2:
        require(xcat.dtype == torch.int8, op, "group_list_type 2 needs int8 x and weight")
    pts_all = _as_list(per_token_scale)
    pts_all = pts_all[0].reshape(-1) if pts_all is not None else None
    out_n = ws[0].shape[-1]
    full = torch.zeros(xcat.shape[0], out_n)
    pieces, row = [], 0
    for g, rows in _group_sizes(op, group_list, group_list_type, count):
        require(row + rows <= xcat.shape[0], op, "group_list covers more rows than x has")
        xs_g = xcat[row:row + rows]
        pts_g = pts_all[row:row + rows] if pts_all is not None else None
        y = act(_one_matmul(xs_g, ws[g], biases[g], scales[g], offsets[g], aq_scales[g],
                            aq_offsets[g], pts_g))
        full[row:row + rows] = y
        pieces.append(y)
        row += rows
    if split_item in (2, 3):
        return [_finish(op, full, xcat.dtype, output_dtype, quantised)]
    return [_finish(op, p, xcat.dtype, output_dtype, quantised) for p in pieces]


def npu_grouped_matmul_finalize_routing(x, w, group_list, *, scale=None, bias=None, offset=None,
                                        pertoken_scale=None, shared_input=None, logit=None,
                                        row_index=None, dtype=None, shared_input_weight=1.0,
                                        shared_input_offset=0, output_bs=0, group_list_type=1):
    """A8W8 down projection + finalize: y_r = (x_r @ w_e) * scale_e * pertoken_scale_r;
    out[row_index[r]] += logit[r] * y_r; out[offset + i] += shared_input_weight * shared_input[i].

    Output float32 (output_bs, n). w is the logical (e, k, n) weight (NZ is a storage detail).
    The A8W4 form (int64 scale, bias, offset) is not modelled.
    """
    op = "npu_grouped_matmul_finalize_routing"
    require(x.dtype == torch.int8, op, "x must be int8 (A8W8 or A8W4)")
    if w.dtype != torch.int8 or bias is not None or offset is not None:
        raise unsupported(op, "the A8W4 form (int4 weight, int64 scale, bias, offset)")
    require(dtype in (None, torch.float32), op, "dtype only supports float32")
    require(scale is not None and pertoken_scale is not None, op,
            "A8W8 needs scale (e, n) and pertoken_scale (m,)")
    require(row_index is not None, op, "row_index is needed to combine the rows")
    n = w.shape[-1]
    out = torch.zeros(output_bs, n, dtype=torch.float32)
    rows = 0
    for e, count in _group_sizes(op, group_list, 0 if group_list_type == 0 else 1, w.shape[0]):
        if count == 0:
            continue
        acc = (x[rows:rows + count].to(torch.int64) @ w[e].to(torch.int64)).to(torch.float32)
        y = acc * f32(scale[e]) * f32(pertoken_scale[rows:rows + count]).unsqueeze(-1)
        if logit is not None:
            y = y * f32(logit[rows:rows + count]).unsqueeze(-1)
        out.index_add_(0, row_index[rows:rows + count].long(), y)
        rows += count
    if shared_input is not None:
        span = shared_input.shape[0]
        require(shared_input_offset + span <= output_bs, op, "shared_input rows exceed output_bs")
        out[shared_input_offset:shared_input_offset + span] += shared_input_weight * f32(shared_input)
    return out


def npu_grouped_matmul_swiglu_quant_v2(x, weight, weight_scale, x_scale, group_list, *,
                                       smooth_scale=None, weight_assist_matrix=None, bias=None,
                                       dequant_mode=0, dequant_dtype=0, quant_mode=0, quant_dtype=0,
                                       group_list_type=0, tuning_config=None):
    """A8W8: C = (x_g @ w_g) * x_scale * w_scale_g; S = silu(C[:, :n/2]) * C[:, n/2:];
    returns (int8 S / (rowmax|S| / 127), rowmax|S| / 127) of shapes (m, n/2) and (m,).

    weight and weight_scale are one-element lists holding (e, k, n) and (e, n). Rows past the
    groups stay zero. The A8W4/A4W4 and 950-only forms are not modelled.
    """
    op = "npu_grouped_matmul_swiglu_quant_v2"
    weights, scales = _as_list(weight), _as_list(weight_scale)
    require(len(weights) == 1 and len(scales) == 1, op,
            "weight and weight_scale must be lists of length 1")
    w, ws = weights[0], scales[0]
    require(x.dim() == 2 and w.dim() == 3, op, "x must be [m, k] and weight [e, k, n]")
    if x.dtype != torch.int8 or w.dtype != torch.int8 or weight_assist_matrix is not None \
            or smooth_scale is not None or bias is not None:
        raise unsupported(op, "forms other than A8W8 (int8 x and weight, no smooth_scale/bias)")
    require(w.shape[-1] % 2 == 0, op, "n must be even")
    m, half = x.shape[0], w.shape[-1] // 2
    out = torch.zeros(m, half, dtype=torch.int8)
    out_scale = torch.zeros(m, dtype=torch.float32)
    xs = f32(x_scale).reshape(-1)
    row = 0
    for g, count in _group_sizes(op, group_list, 0 if group_list_type == 0 else 1, w.shape[0]):
        if count == 0:
            continue
        require(row + count <= m, op, "group_list covers more rows than x has")
        acc = (x[row:row + count].to(torch.int64) @ w[g].to(torch.int64)).to(torch.float32)
        c = acc * f32(ws[g]).reshape(1, -1) * xs[row:row + count].unsqueeze(-1)
        s = torch.nn.functional.silu(c[:, :half]) * c[:, half:]
        q, qs = quantize_symmetric_rows(s)
        out[row:row + count] = q.to(torch.int8)
        out_scale[row:row + count] = qs
        row += count
    return out, out_scale
