"""Numeric comparison of an original chain (reference) with its fused replacement.

Per-dtype tolerances (documented in rules/README.md). An element passes when
|candidate - reference| <= atol + rtol * |reference|; a tensor passes when every
element passes and the cosine similarity is at least `cosine`.

In bfloat16 and float16 the reference is the chain run in that dtype, and CPU
kernels differ in how they accumulate (torch 1.13's batched bfloat16 matmul on a
CPU without bf16 instructions rounds partial sums). Given the chain's float32
evaluation on the same inputs (`exact`), an element also passes when the candidate
is no further from it than the reference is: the difference is then the chain's
own rounding on this machine, not the replacement's. An integer output (top-k
positions) passes when it equals the float32 chain's.
"""
from dataclasses import dataclass

import torch

TOLERANCES = {
    torch.float32: {"atol": 1e-5, "rtol": 1e-4, "cosine": 0.99999},
    torch.float16: {"atol": 1e-3, "rtol": 1e-2, "cosine": 0.9995},
    torch.bfloat16: {"atol": 1e-2, "rtol": 2e-2, "cosine": 0.999},
    torch.int8: {"atol": 1, "rtol": 0, "cosine": 0.999},
    torch.int32: {"atol": 0, "rtol": 0, "cosine": 1.0},
    torch.int64: {"atol": 0, "rtol": 0, "cosine": 1.0},
    torch.bool: {"atol": 0, "rtol": 0, "cosine": 1.0},
}

_NAMES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
          "int8": torch.int8, "int32": torch.int32, "int64": torch.int64, "bool": torch.bool}


def tolerance_for(dtype, overrides=None):
    """The table entry for dtype, updated with RULE["tolerance"][dtype name] when present."""
    tol = dict(TOLERANCES.get(dtype, TOLERANCES[torch.float32]))
    for name, value in (overrides or {}).items():
        if _NAMES.get(name) == dtype:
            tol.update(value)
    return tol


@dataclass
class Comparison:
    index: int
    dtype: torch.dtype
    max_abs: float
    max_rel: float
    cosine: float
    ok: bool
    why: str = ""

    def describe(self):
        return (f"output[{self.index}] {str(self.dtype).replace('torch.', '')}: "
                f"max_abs={self.max_abs:.3e} max_rel={self.max_rel:.3e} "
                f"cosine={self.cosine:.6f}{' ' + self.why if self.why else ''}")


def flatten_outputs(value):
    """A tensor, or nested tuples/lists of tensors (None entries dropped), as a flat list."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        out = []
        for item in value:
            out.extend(flatten_outputs(item))
        return out
    if value is None:
        return []
    raise TypeError(f"a rule function returned {type(value).__name__}, expected tensors")


_LOW_PRECISION = (torch.bfloat16, torch.float16)


def _cosine(rn, cn, max_abs):
    denom = float(rn.norm() * cn.norm())
    if max_abs == 0.0:  # identical: rounding in the norms must not fail an exact match
        return 1.0
    if denom > 0:
        return float(rn @ cn) / denom
    return 0.0  # an all-zero side that differs from the other


def _compare_one(index, ref, cand, overrides, exact=None):
    if tuple(ref.shape) != tuple(cand.shape):
        return Comparison(index, ref.dtype, float("inf"), float("inf"), 0.0, False,
                          f"shape {tuple(cand.shape)} != reference {tuple(ref.shape)}")
    if ref.dtype != cand.dtype:
        return Comparison(index, ref.dtype, float("inf"), float("inf"), 0.0, False,
                          f"dtype {cand.dtype} != reference {ref.dtype}")
    tol = tolerance_for(ref.dtype, overrides)
    r, c = ref.double(), cand.double()
    diff = (r - c).abs()
    max_abs = float(diff.max()) if diff.numel() else 0.0
    max_rel = float((diff / (r.abs() + max(tol["atol"], 1e-12))).max()) if diff.numel() else 0.0
    cosine = _cosine(r.flatten(), c.flatten(), max_abs)
    close = diff <= tol["atol"] + tol["rtol"] * r.abs()
    within = bool(close.all())
    ok = within and cosine >= tol["cosine"] and bool(torch.isfinite(c).all())
    why = ""
    if not ok and exact is not None and ref.dtype in _LOW_PRECISION and tuple(exact.shape) == tuple(ref.shape):
        e = exact.double()
        no_further = (c - e).abs() <= (r - e).abs()
        exact_cosine = _cosine(e.flatten(), c.flatten(), float((e - c).abs().max()) if e.numel() else 0.0)
        if bool((close | no_further).all()) and max(cosine, exact_cosine) >= tol["cosine"] and bool(torch.isfinite(c).all()):
            ok = True
            why = "(within tolerance, or no further from the float32 chain than the chain itself)"
    if (not ok and exact is not None and not ref.dtype.is_floating_point and ref.dtype != torch.bool
            and tuple(exact.shape) == tuple(ref.shape) and bool(torch.equal(cand, exact.to(cand.dtype)))):
        # positions or ids chosen by comparing values (a top-k): the chain run in low
        # precision may order near-equal values differently; the fused result equals
        # the choice the chain makes in float32
        ok = True
        why = "(equal to the float32 chain's choice; the chain's own rounding reorders near-equal values)"
    if not ok:
        why = f"(tolerance atol={tol['atol']} rtol={tol['rtol']} cosine>={tol['cosine']})"
    return Comparison(index, ref.dtype, max_abs, max_rel, cosine, ok, why)


def compare_outputs(reference, candidate, overrides=None, exact=None):
    """Comparisons for each output position; a count mismatch is one failed Comparison.

    `exact`: optionally the chain's outputs computed in float32 from the same inputs
    (see the module docstring); used only for bfloat16 and float16 outputs.
    """
    refs, cands = flatten_outputs(reference), flatten_outputs(candidate)
    if len(refs) != len(cands):
        return [Comparison(0, torch.float32, float("inf"), float("inf"), 0.0, False,
                           f"{len(cands)} outputs, reference has {len(refs)}")]
    exacts = flatten_outputs(exact) if exact is not None else []
    if len(exacts) != len(refs):
        exacts = [None] * len(refs)
    return [_compare_one(i, r, c, overrides, x) for i, (r, c, x) in enumerate(zip(refs, cands, exacts))]


def upcast_inputs(inputs):
    """The inputs with every bfloat16/float16 tensor as float32 (the chain's exact evaluation)."""
    return {k: (v.float() if isinstance(v, torch.Tensor) and v.dtype in _LOW_PRECISION else v)
            for k, v in inputs.items()}


def exact_outputs(rule, search, inputs):
    """The chain run on upcast inputs, in the replacement's layout (in_replacement_layout).

    None where no input is bfloat16/float16 (compare_outputs has no use for it
    then) or where the chain cannot run in float32.
    """
    if not any(isinstance(v, torch.Tensor) and v.dtype in _LOW_PRECISION for v in inputs.values()):
        return None
    try:
        upcast = upcast_inputs(inputs)
        return in_replacement_layout(rule, search(**upcast), upcast)
    except Exception:  # a chain that insists on its dtype: compare with the tolerance alone
        return None


def deinterleave_last(t):
    """Even lanes of the last axis first, then the odd ones (the order npu_interleave_rope writes)."""
    return torch.cat((t[..., 0::2], t[..., 1::2]), dim=-1)


def absorb_last(t, weight, head_axis):
    """t's last axis (D wide, heads on head_axis) folded with the key half of an MLA up-projection.

    weight is kv_b_proj's weight, [heads * (D + V), C] as nn.Linear keeps it, or already
    per head, [heads, D (+ V), C]; its first D rows per head are W_UK. Each head's D-wide
    vector becomes a C-wide one: out[..., n, ..., c] = sum_d t[..., n, ..., d] * W_UK[n, d, c],
    computed in float32 and returned in t's dtype (the absorbed query of MLA).
    """
    axis = head_axis % t.dim()
    heads, d = t.shape[axis], t.shape[-1]
    w_uk = weight.reshape(heads, -1, weight.shape[-1])[:, :d].float()
    moved = t.float().movedim(axis, -2)  # [..., heads, D]
    out = torch.einsum("...nd,ndc->...nc", moved, w_uk)
    return out.movedim(-2, axis).to(t.dtype)


def in_replacement_layout(rule, reference, inputs=None):
    """The search's outputs in the layout the replacement keeps them in.

    RULE["deinterleaved_returns"] lists returned values (flattened positions) that
    the fused operator stores with the last axis de-interleaved; the reference is
    reordered the same way before the comparison. RULE["absorbed_returns"] maps
    positions to {"weight": input name, "head_axis": int}: the operator returns that
    value already multiplied by W_UK (MLA's absorbed query), so the reference is folded
    with the named input (absorb_last) before the comparison; inputs are the ones the
    search ran on. Other outputs are unchanged.
    """
    positions = set(rule.get("deinterleaved_returns") or ())
    absorbed = {int(k): v for k, v in (rule.get("absorbed_returns") or {}).items()}
    if not positions and not absorbed:
        return reference
    if absorbed and inputs is None:
        raise ValueError(f"{rule.get('id')}: absorbed_returns needs the inputs the search ran on")
    outputs = flatten_outputs(reference)
    laid_out = []
    for i, t in enumerate(outputs):
        if i in absorbed:
            t = absorb_last(t, inputs[absorbed[i]["weight"]], absorbed[i]["head_axis"])
        laid_out.append(deinterleave_last(t) if i in positions else t)
    return laid_out
