"""RMSNorm family: npu_rms_norm, npu_add_rms_norm and their quantising/casting variants."""
import torch

from ._common import (INT8_MAX, f32, pack_int4_to_int32, quantize_symmetric_rows, require,
                      rms_norm_f32, round_half_even)


def _norm_axes(op, x, gamma):
    """gamma covers the trailing axes of x; its rank is the number of normalised axes."""
    require(gamma.dim() >= 1 and tuple(x.shape[x.dim() - gamma.dim():]) == tuple(gamma.shape),
            op, f"gamma.shape {tuple(gamma.shape)} must equal the trailing axes of x {tuple(x.shape)}")
    return gamma.dim()


def _check_gamma_dtype(op, x, gamma):
    """Same dtype, or float16/bfloat16 x with a float32 gamma (A2/A3)."""
    ok = gamma.dtype == x.dtype or (x.dtype in (torch.float16, torch.bfloat16)
                                    and gamma.dtype == torch.float32)
    require(ok, op, f"gamma dtype {gamma.dtype} does not pair with x dtype {x.dtype} "
                    "(same dtype, or float16/bfloat16 x with float32 gamma)")


def npu_rms_norm(self, gamma, epsilon=1e-06):
    """Returns (y, rstd); rstd is float32 with the normalised axes kept as 1."""
    require(1 <= self.dim() <= 8, "npu_rms_norm", "x must have 1 to 8 dims")
    _check_gamma_dtype("npu_rms_norm", self, gamma)
    axes = _norm_axes("npu_rms_norm", self, gamma)
    y, rstd = rms_norm_f32(self, gamma, epsilon, axes)
    return y.to(self.dtype), rstd


def npu_gemma_rms_norm(self, gamma, epsilon=1e-06):
    """Gemma's norm multiplies by (1 + gamma)."""
    axes = _norm_axes("npu_gemma_rms_norm", self, gamma)
    y, rstd = rms_norm_f32(self, 1.0 + f32(gamma), epsilon, axes)
    return y.to(self.dtype), rstd


def npu_add_rms_norm(x1, x2, gamma, epsilon=1e-06):
    """Returns (y, rstd, x) where x = x1 + x2 is the new residual."""
    require(x1.shape == x2.shape, "npu_add_rms_norm", "x1 and x2 must have the same shape")
    require(x1.dtype == x2.dtype == gamma.dtype, "npu_add_rms_norm",
            f"x1, x2 and gamma must share one dtype (got {x1.dtype}, {x2.dtype}, {gamma.dtype})")
    axes = _norm_axes("npu_add_rms_norm", x1, gamma)
    x = f32(x1) + f32(x2)
    y, rstd = rms_norm_f32(x, gamma, epsilon, axes)
    return y.to(x1.dtype), rstd, x.to(x1.dtype)


def npu_add_rms_norm_cast(x1, x2, gamma, epsilon=1e-06):
    """Returns (y float32, y in x1's dtype, rstd, x)."""
    axes = _norm_axes("npu_add_rms_norm_cast", x1, gamma)
    x = f32(x1) + f32(x2)
    y, rstd = rms_norm_f32(x, gamma, epsilon, axes)
    return y, y.to(x1.dtype), rstd, x.to(x1.dtype)


def _static_quant(y, scales, zero_points, div_mode):
    s = f32(scales)
    q = y / s if div_mode else y * s
    if zero_points is not None:
        q = q + f32(zero_points)
    return round_half_even(q).clamp(-128, 127).to(torch.int8)


def npu_add_rms_norm_quant(x1, x2, gamma, scales1, zero_points1, beta=None, scales2=None,
                           zero_points2=None, *, axis=-1, epsilon=1e-06, div_mode=True):
    """Returns (y1 int8, y2 int8, x); y2 is zeros when scales2 is not given."""
    require(axis == -1, "npu_add_rms_norm_quant", "axis only supports -1")
    axes = _norm_axes("npu_add_rms_norm_quant", x1, gamma)
    x = f32(x1) + f32(x2)
    y, _ = rms_norm_f32(x, gamma, epsilon, axes)
    if beta is not None:
        y = y + f32(beta)
    y1 = _static_quant(y, scales1, zero_points1, div_mode)
    y2 = (_static_quant(y, scales2, zero_points2, div_mode) if scales2 is not None
          else torch.zeros_like(y1))
    return y1, y2, x.to(x1.dtype)


def _dynamic_quant_path(y, smooth, y_dtype):
    v = y if smooth is None else y * f32(smooth)
    if y_dtype == torch.quint4x2:
        q, scale = quantize_symmetric_rows(v, 7.0)
        return pack_int4_to_int32(q), scale
    q, scale = quantize_symmetric_rows(v, INT8_MAX)
    return q.to(torch.int8), scale


def npu_add_rms_norm_dynamic_quant(x1, x2, gamma, *, smooth_scale1=None, smooth_scale2=None,
                                   beta=None, epsilon=1e-6, output_mask=[], y_dtype=None):
    """Returns (y1, y2, x, scale1, scale2); a path switched off gives empty tensors."""
    axes = _norm_axes("npu_add_rms_norm_dynamic_quant", x1, gamma)
    x = f32(x1) + f32(x2)
    y, _ = rms_norm_f32(x, gamma, epsilon, axes)
    if beta is not None:
        y = y + f32(beta)
    if output_mask:
        run1, run2 = bool(output_mask[0]), bool(output_mask[1])
    else:
        run1, run2 = True, smooth_scale1 is not None and smooth_scale2 is not None
    empty_q = torch.empty(0, dtype=torch.int8)
    empty_s = torch.empty(0, dtype=torch.float32)
    y1, s1 = _dynamic_quant_path(y, smooth_scale1, y_dtype) if run1 else (empty_q, empty_s)
    y2, s2 = _dynamic_quant_path(y, smooth_scale2, y_dtype) if run2 else (empty_q, empty_s)
    return y1, y2, x.to(x1.dtype), s1, s2


def npu_rms_norm_quant(x, gamma, beta, scale, offset, epsilon=1e-06, dst_dtype='int8'):
    """y = round(rmsnorm(x) * gamma + beta) * scale + offset): note the multiplication."""
    axes = _norm_axes("npu_rms_norm_quant", x, gamma)
    y, _ = rms_norm_f32(x, gamma, epsilon, axes)
    if beta is not None:
        y = y + f32(beta)
    q = round_half_even(y * f32(scale) + f32(offset))
    if dst_dtype in ("quint4x2", torch.quint4x2):
        return pack_int4_to_int32(q.clamp(-8, 7))
    return q.clamp(-128, 127).to(torch.int8)


def npu_layer_norm_eval(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    y = torch.nn.functional.layer_norm(f32(input), list(normalized_shape), f32(weight),
                                       f32(bias), eps)
    return y.to(input.dtype)
