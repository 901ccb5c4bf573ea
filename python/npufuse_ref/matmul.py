"""npu_transpose_batchmatmul and the format helpers model code touches."""
import torch

from ._common import f32, require, round_half_even, unsupported
from .quant import decode_quant_param


def npu_transpose_batchmatmul(input, weight, *, bias=None, scale=None, perm_x1=[0, 1, 2],
                              perm_x2=[0, 1, 2], perm_y=[1, 0, 2], batch_split_factor=1):
    """Y = permute(permute(input, perm_x1) @ permute(weight, perm_x2), perm_y).

    With an int64 scale (npu_trans_quant_param) the result is int8 of shape (M, 1, B * N).
    """
    op = "npu_transpose_batchmatmul"
    require(input.dim() == 3 and weight.dim() == 3, op, "input and weight must be 3-D")
    require(list(perm_x1) in ([0, 1, 2], [1, 0, 2]), op, "perm_x1 must be [0, 1, 2] or [1, 0, 2]")
    require(list(perm_x2) == [0, 1, 2], op, "perm_x2 only supports [0, 1, 2]")
    require(list(perm_y) == [1, 0, 2], op, "perm_y only supports [1, 0, 2]")
    if bias is not None:
        raise ValueError(f"{op}: constraint violated: bias is not supported")
    if batch_split_factor != 1:
        raise unsupported(op, "batch_split_factor other than 1")
    x = f32(input).permute(*perm_x1)
    w = f32(weight).permute(*perm_x2)
    batch, m, k = x.shape
    require(w.shape[0] == batch and w.shape[1] == k, op,
            f"weight must be (B, K, N) = ({batch}, {k}, N), got {tuple(w.shape)}")
    n = w.shape[2]
    require(k % 16 == 0 and n % 16 == 0, op, f"K ({k}) and N ({n}) must be multiples of 16")
    require(1 <= batch < 65536 and 1 <= n < 65536, op, "B and N must lie in [1, 65536)")
    if list(perm_x1) == [1, 0, 2]:
        require(k * batch < 65536, op, "with perm_x1 [1, 0, 2], K * B must be < 65536")
    y = (x @ w).permute(*perm_y)  # (M, B, N)
    if scale is not None:
        s = decode_quant_param(scale) if scale.dtype == torch.int64 else f32(scale)
        q = y.reshape(m, 1, batch * n) * s.reshape(-1)
        return round_half_even(q).clamp(-128, 127).to(torch.int8)
    return y.contiguous().to(input.dtype)


def npu_format_cast(input, acl_format):
    """Storage formats do not exist on CPU: the logical tensor is returned unchanged."""
    return input


def npu_format_cast_(input, acl_format):
    return input


def get_npu_format(input):
    return 2  # ND
