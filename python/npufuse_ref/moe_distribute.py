"""MC2 expert-parallel dispatch/combine, emulated for a single rank (ep_world_size = 1).

With one rank every expert is local, so dispatch reduces to "sort the (token, k) pairs
by expert and optionally quantise them", and combine to "weight and sum them back".
assist_info_for_combine is this emulation's own bookkeeping: its first A entries hold
the source pair index t * K + k of each dispatched row (A = BS * K); the device's
encoding is opaque and only ever passed straight from dispatch to combine.
Multi-rank groups, TP domains, x_active_mask and the special (zero/copy/constant)
experts raise NotImplementedError.
"""
import torch

from ._common import f32, quantize_symmetric_rows, require, unsupported

_ASSIST_WIDTH = 128


def _single_rank_only(op, ep_world_size, ep_rank_id, tp_world_size, shared_expert_rank_num,
                      zero_expert_num, copy_expert_num, const_expert_num):
    if ep_world_size != 1 or ep_rank_id != 0:
        raise unsupported(op, "more than one EP rank (only the single-rank emulation exists)")
    if tp_world_size not in (0, 1):
        raise unsupported(op, "a TP communication domain")
    if shared_expert_rank_num:
        raise unsupported(op, "shared-expert ranks")
    if zero_expert_num or copy_expert_num or const_expert_num:
        raise unsupported(op, "zero/copy/constant experts")


def npu_moe_distribute_dispatch_v2(x, expert_ids, group_ep, ep_world_size, ep_rank_id,
                                   moe_expert_num, *, scales=None, x_active_mask=None,
                                   expert_scales=None, elastic_info=None, performance_info=None,
                                   group_tp="", tp_world_size=0, tp_rank_id=0, expert_shard_type=0,
                                   shared_expert_num=1, shared_expert_rank_num=0, quant_mode=0,
                                   global_bs=0, expert_token_nums_type=1, comm_alg="",
                                   zero_expert_num=0, copy_expert_num=0, const_expert_num=0):
    """Returns (expand_x, dynamic_scales, assist_info_for_combine, expert_token_nums,
    ep_recv_counts, tp_recv_counts, expand_scales)."""
    op = "npu_moe_distribute_dispatch_v2"
    _single_rank_only(op, ep_world_size, ep_rank_id, tp_world_size, shared_expert_rank_num,
                      zero_expert_num, copy_expert_num, const_expert_num)
    if x_active_mask is not None:
        raise unsupported(op, "x_active_mask")
    require(x.dim() == 2 and expert_ids.dim() == 2 and x.shape[0] == expert_ids.shape[0], op,
            "x must be (BS, H) and expert_ids (BS, K)")
    bs, k = expert_ids.shape
    require(0 < k <= 16, op, "K must satisfy 0 < K <= 16")
    require(1 <= moe_expert_num <= 1024, op, "moe_expert_num must lie in [1, 1024]")
    require(expert_ids.dtype == torch.int32, op, "expert_ids must be int32")
    ids = expert_ids.long()
    require(bool(((ids >= 0) & (ids < moe_expert_num)).all()), op,
            "expert_ids must lie in [0, moe_expert_num)")
    for row in ids.tolist():
        require(len(set(row)) == len(row), op, "expert_ids must be unique within a token")
    require(quant_mode in (0, 2), op, "quant_mode must be 0 (none) or 2 (dynamic)")
    require(expert_token_nums_type in (0, 1), op, "expert_token_nums_type must be 0 or 1")
    order = torch.sort(ids.reshape(-1), stable=True).indices
    rows = x[order // k]
    if quant_mode == 2:
        v = f32(rows)
        if scales is not None:
            v = v * f32(scales)[ids.reshape(-1)[order]]
        q, dyn = quantize_symmetric_rows(v)
        expand_x, dynamic_scales = q.to(torch.int8), dyn
    else:
        expand_x, dynamic_scales = rows.clone(), torch.empty(0, dtype=torch.float32)
    counts = torch.bincount(ids.reshape(-1), minlength=moe_expert_num).to(torch.int64)
    expert_token_nums = counts if expert_token_nums_type == 1 else torch.cumsum(counts, 0)
    assist = torch.zeros(bs * k * _ASSIST_WIDTH, dtype=torch.int32)
    assist[:bs * k] = order.to(torch.int32)
    ep_recv_counts = torch.tensor([bs * k], dtype=torch.int32)
    tp_recv_counts = torch.zeros(1, dtype=torch.int32)
    expand_scales = f32(expert_scales).reshape(-1)[order] if expert_scales is not None \
        else torch.empty(0, dtype=torch.float32)
    return (expand_x, dynamic_scales, assist, expert_token_nums, ep_recv_counts, tp_recv_counts,
            expand_scales)


def npu_moe_distribute_combine_v2(expand_x, expert_ids, assist_info_for_combine, ep_send_counts,
                                  expert_scales, group_ep, ep_world_size, ep_rank_id,
                                  moe_expert_num, *, tp_send_counts=None, x_active_mask=None,
                                  expand_scales=None, shared_expert_x=None, elastic_info=None,
                                  ori_x=None, const_expert_alpha_1=None, const_expert_alpha_2=None,
                                  const_expert_v=None, performance_info=None, group_tp="",
                                  tp_world_size=0, tp_rank_id=0, expert_shard_type=0,
                                  shared_expert_num=1, shared_expert_rank_num=0, global_bs=0,
                                  comm_quant_mode=0, comm_alg="", zero_expert_num=0,
                                  copy_expert_num=0, const_expert_num=0):
    """out[t] = sum_k expert_scales[t, k] * expand_x[row of (t, k)] (+ shared_expert_x[t])."""
    op = "npu_moe_distribute_combine_v2"
    _single_rank_only(op, ep_world_size, ep_rank_id, tp_world_size, shared_expert_rank_num,
                      zero_expert_num, copy_expert_num, const_expert_num)
    if x_active_mask is not None:
        raise unsupported(op, "x_active_mask")
    bs, k = expert_ids.shape
    src = assist_info_for_combine[:bs * k].long()
    per_pair = torch.zeros(bs * k, expand_x.shape[-1])
    per_pair[src] = f32(expand_x[:bs * k])
    out = (per_pair.reshape(bs, k, -1) * f32(expert_scales).unsqueeze(-1)).sum(dim=1)
    if shared_expert_x is not None:
        out = out + f32(shared_expert_x)
    return out.to(expand_x.dtype)


def npu_moe_distribute_combine_add_rms_norm(
        expand_x, expert_ids, expand_idx, ep_send_counts, expert_scales, residual_x, gamma, group_ep,
        ep_world_size, ep_rank_id, moe_expert_num, *, tp_send_counts=None, x_active_mask=None,
        activation_scale=None, weight_scale=None, group_list=None, expand_scales=None,
        shared_expert_x=None, elastic_info=None, ori_x=None, const_expert_alpha_1=None,
        const_expert_alpha_2=None, const_expert_v=None, group_tp="", tp_world_size=0,
        tp_rank_id=0, expert_shard_type=0, shared_expert_num=1, shared_expert_rank_num=0,
        global_bs=0, out_dtype=0, comm_quant_mode=0, group_list_type=0, comm_alg="",
        norm_eps=1e-06, zero_expert_num=0, copy_expert_num=0, const_expert_num=0):
    """combine_v2 + residual add + RMSNorm; returns (y, rstd, x) shaped (BS, 1, H), (BS, 1, 1)."""
    op = "npu_moe_distribute_combine_add_rms_norm"
    if activation_scale is not None or weight_scale is not None:
        raise unsupported(op, "activation_scale / weight_scale")
    combined = npu_moe_distribute_combine_v2(
        expand_x, expert_ids, expand_idx, ep_send_counts, expert_scales, group_ep, ep_world_size,
        ep_rank_id, moe_expert_num, x_active_mask=x_active_mask, shared_expert_x=shared_expert_x,
        tp_world_size=tp_world_size, shared_expert_rank_num=shared_expert_rank_num,
        zero_expert_num=zero_expert_num, copy_expert_num=copy_expert_num,
        const_expert_num=const_expert_num)
    x = f32(combined).unsqueeze(1) + f32(residual_x)
    rstd = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + norm_eps)
    y = x * rstd * f32(gamma)
    return y.to(residual_x.dtype), rstd, x.to(residual_x.dtype)


def npu_moe_distribute_dispatch(x, expert_ids, group_ep, ep_world_size, ep_rank_id, moe_expert_num,
                                *, scales=None, x_active_mask=None, expert_scales=None, group_tp="",
                                tp_world_size=0, tp_rank_id=0, expert_shard_type=0,
                                shared_expert_num=1, shared_expert_rank_num=0, quant_mode=0,
                                global_bs=0, expert_token_nums_type=1):
    """First-version dispatch (single rank): expand_idx (BS * K,) holds each row's source pair."""
    outs = npu_moe_distribute_dispatch_v2(
        x, expert_ids, group_ep, ep_world_size, ep_rank_id, moe_expert_num, scales=scales,
        x_active_mask=x_active_mask, expert_scales=expert_scales, tp_world_size=tp_world_size,
        shared_expert_rank_num=shared_expert_rank_num, quant_mode=quant_mode,
        expert_token_nums_type=expert_token_nums_type)
    expand_x, dynamic_scales, assist, counts, ep_recv, tp_recv, expand_scales = outs
    return (expand_x, dynamic_scales, assist[:expert_ids.numel()], counts, ep_recv, tp_recv,
            expand_scales)


def npu_moe_distribute_combine(expand_x, expert_ids, expand_idx, ep_send_counts, expert_scales,
                               group_ep, ep_world_size, ep_rank_id, moe_expert_num, *,
                               tp_send_counts=None, x_active_mask=None, activation_scale=None,
                               weight_scale=None, group_list=None, expand_scales=None,
                               shared_expert_x=None, group_tp="", tp_world_size=0, tp_rank_id=0,
                               expert_shard_type=0, shared_expert_num=1, shared_expert_rank_num=0,
                               global_bs=0, out_dtype=0, comm_quant_mode=0, group_list_type=0):
    """First-version combine (single rank); shared_expert_x is reserved and ignored here."""
    op = "npu_moe_distribute_combine"
    if activation_scale is not None or weight_scale is not None:
        raise unsupported(op, "activation_scale / weight_scale")
    return npu_moe_distribute_combine_v2(
        expand_x, expert_ids, expand_idx, ep_send_counts, expert_scales, group_ep, ep_world_size,
        ep_rank_id, moe_expert_num, x_active_mask=x_active_mask, tp_world_size=tp_world_size,
        shared_expert_rank_num=shared_expert_rank_num)
