"""Sampling-side filters: npu_top_k_top_p."""
import torch

from ._common import f32, require


def npu_top_k_top_p(logits, p, k):
    """Per row: keep the k[b] largest logits, then drop the smallest-probability tail whose
    cumulative probability is <= 1 - p[b] (the largest entry always stays); others -> -inf."""
    op = "npu_top_k_top_p"
    require(logits.dim() == 2, op, "logits must be 2-D [batch, vocab]")
    v = f32(logits)
    sorted_vals, order = torch.sort(v, dim=-1, stable=True)  # ascending
    vocab = v.shape[-1]
    kth = torch.gather(sorted_vals, 1, (vocab - k.long()).clamp(0, vocab - 1).unsqueeze(1))
    sorted_vals = sorted_vals.masked_fill(sorted_vals < kth, float("-inf"))
    cum = torch.softmax(sorted_vals, dim=-1).cumsum(dim=-1)
    drop = cum <= (1 - f32(p)).unsqueeze(1)
    drop[:, -1] = False
    sorted_vals = sorted_vals.masked_fill(drop, float("-inf"))
    out = torch.empty_like(sorted_vals).scatter_(1, order, sorted_vals)
    return out.to(logits.dtype)
