"""Direct torch formulations the reference operators are checked against.

They are written from the documented formulas independently of npufuse_ref, in
float64, so a test compares two separate derivations of the same maths.
"""
import functools

import torch


def attention(q, k, v, scale, allowed=None, sink=None, extra_scores=None):
    """softmax(scale * q k^T [+ extra]) v per head, q (N, Sq, D), k/v (KV_N, Skv, D).

    `allowed` (Sq, Skv) bool; GQA repeats each KV head N / KV_N times (head h uses KV head
    h // group). `sink` (N,) adds one extra logit per head to the softmax denominator.
    """
    q, k, v = q.double(), k.double(), v.double()
    group = q.shape[0] // k.shape[0]
    k = torch.repeat_interleave(k, group, dim=0)
    v = torch.repeat_interleave(v, group, dim=0)
    scores = torch.matmul(q, k.transpose(1, 2))
    if extra_scores is not None:
        scores = scores + extra_scores.double()
    scores = scores * scale
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    if sink is not None:
        sink_col = sink.double().reshape(-1, 1, 1).expand(-1, scores.shape[1], 1)
        probs = torch.softmax(torch.cat([scores, sink_col], dim=-1), dim=-1)[..., :-1]
    else:
        probs = torch.softmax(scores, dim=-1)
    probs = torch.nan_to_num(probs, nan=0.0)
    return torch.matmul(probs, v), torch.logsumexp(scores, dim=-1, keepdim=True)


def causal_right_down(sq, skv):
    return torch.ones(sq, skv, dtype=torch.bool).tril(diagonal=skv - sq)


def causal_left_up(sq, skv):
    return torch.ones(sq, skv, dtype=torch.bool).tril(diagonal=0)


def band_right_down(sq, skv, pre, nxt):
    keep = torch.ones(sq, skv, dtype=torch.bool)
    shift = skv - sq
    return keep.tril(diagonal=shift + nxt) & keep.triu(diagonal=shift - pre)


@functools.lru_cache(maxsize=1)
def optimized_mask():
    """The compressed causal mask modes 2/3/4 take (shared; callers must not modify it)."""
    return torch.triu(torch.ones(2048, 2048), diagonal=1).bool()


def rms_norm(x, gamma, eps):
    x = x.double()
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * gamma.double()


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def complex_rope(x, angles):
    """Interleaved RoPE written with complex numbers: pairs (x0, x1) rotate by angle."""
    pairs = x.double().reshape(*x.shape[:-1], -1, 2)
    z = torch.complex(pairs[..., 0], pairs[..., 1]) * torch.polar(torch.ones_like(angles), angles)
    return torch.stack([z.real, z.imag], dim=-1).flatten(-2)


def silu(x):
    return x / (1 + torch.exp(-x))
