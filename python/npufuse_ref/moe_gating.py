"""MoE routers: npu_moe_gating_top_k_softmax and npu_moe_gating_top_k.

norm_type numbering of npu_moe_gating_top_k: the doc's parameter list says 1 = softmax,
0 = sigmoid, but its own equivalent-computation listing (and serving stacks that use
norm_type=1 for DeepSeek's sigmoid router) use 0 = softmax, 1 = sigmoid with the
renormalisation on the sigmoid path. This reference follows the listing.
"""
import torch

from ._common import f32, require


def npu_moe_gating_top_k_softmax(x, finished=None, k=1):
    """Returns (y, expert_idx, row_idx): top-k of softmax(x); row_idx[t, j] = j * rows + t.

    Rows flagged in `finished` get weight 0 and expert id E (one past the last expert),
    so they sort after every real expert in the routing ops.
    """
    op = "npu_moe_gating_top_k_softmax"
    require(x.dim() in (2, 3), op, "x must be 2-D or 3-D")
    experts = x.shape[-1]
    require(0 < k <= experts and k <= 1024, op, f"k must satisfy 0 < k <= x.shape[-1] and k <= 1024 (got {k})")
    probs = torch.softmax(f32(x), dim=-1)
    y, idx = torch.topk(probs, k, dim=-1)
    if finished is not None:
        require(tuple(finished.shape) == tuple(x.shape[:-1]), op, "finished must have shape x.shape[:-1]")
        done = finished.bool().unsqueeze(-1)
        y = torch.where(done, torch.zeros_like(y), y)
        idx = torch.where(done, torch.full_like(idx, experts), idx)
    rows = y.numel() // k
    row_idx = torch.arange(rows * k, dtype=torch.int32).reshape(k, rows).t().reshape(y.shape)
    return y.to(x.dtype), idx.to(torch.int32), row_idx


def _check_gating_args(op, x, k, bias, k_group, group_count, group_select_mode, renorm, norm_type):
    require(x.dim() == 2, op, "x must be 2-D")
    experts = x.shape[-1]
    require(experts <= 2048, op, f"the expert count (last axis of x) must be <= 2048 (got {experts})")
    require(group_count >= 1 and experts % group_count == 0, op,
            f"the expert count ({experts}) must be divisible by group_count ({group_count})")
    per_group = experts // group_count
    if group_count > 1:
        require(per_group > 2, op, "experts per group (E / group_count) must be > 2")
        aligned = -(-per_group // 32) * 32
        require(aligned * group_count <= 2048, op, "align32(E / group_count) * group_count must be <= 2048")
    require(1 <= k_group <= group_count, op, f"k_group must satisfy 1 <= k_group <= group_count (got {k_group})")
    require(1 <= k <= per_group * k_group, op,
            f"k must satisfy 1 <= k <= E / group_count * k_group = {per_group * k_group} (got {k})")
    require(group_select_mode in (0, 1), op, "group_select_mode must be 0 (max) or 1 (sum of top 2)")
    require(renorm == 0, op, "renorm only supports 0")
    require(norm_type in (0, 1), op, "norm_type must be 0 or 1")
    if bias is not None:
        require(tuple(bias.shape) == (experts,), op, "bias must be 1-D [E]")
        require(bias.dtype == x.dtype, op, "bias dtype must equal x dtype")


def npu_moe_gating_top_k(x, k, *, bias=None, k_group=1, group_count=1, group_select_mode=0,
                         renorm=0, norm_type=0, out_flag=False, routed_scaling_factor=1.0,
                         eps=1e-20):
    """Returns (y, expert_idx, norm_out); norm_out is the float32 score matrix when out_flag."""
    op = "npu_moe_gating_top_k"
    _check_gating_args(op, x, k, bias, k_group, group_count, group_select_mode, renorm, norm_type)
    logits = f32(x)
    scores = torch.softmax(logits, dim=-1) if norm_type == 0 else torch.sigmoid(logits)
    choice = scores if bias is None else scores + f32(bias)
    if group_count > 1:
        grouped = choice.reshape(choice.shape[0], group_count, -1)
        if group_select_mode == 0:
            group_score = grouped.amax(dim=-1)
        else:
            group_score = grouped.topk(2, dim=-1).values.sum(dim=-1)
        keep = torch.sort(-group_score, dim=-1, stable=True).indices[:, :k_group]
        group_mask = torch.ones_like(group_score, dtype=torch.bool)
        group_mask.scatter_(1, keep, False)
        grouped = grouped.masked_fill(group_mask.unsqueeze(-1), float("-inf"))
        choice = grouped.reshape(choice.shape)
    idx = torch.sort(-choice, dim=-1, stable=True).indices[:, :k]
    y = torch.gather(scores, 1, idx)
    if norm_type == 1:
        y = y / (y.sum(dim=-1, keepdim=True) + eps)
    y = y * routed_scaling_factor
    norm_out = scores if out_flag else torch.empty(0, dtype=torch.float32)
    return y.to(x.dtype), idx.to(torch.int32), norm_out
