"""Expert loop (ep > 1, decode) whose sum meets the next layer's residual add and RMSNorm becomes MC2 dispatch + grouped matmul + npu_moe_distribute_combine_add_rms_norm (A3).

What it does
    Finds the per-expert loop of moe.experts_distribute (`one_hot` or an id compare,
    `torch.where` per expert, the expert's SwiGLU MLP, the weighted result accumulated
    per token), optionally plus a shared expert's output, when that sum is added to the
    residual stream and the sum is normalised by the next RMSNorm: in a decoder stack
    that is the MoE layer's residual add and the next layer's input norm (or the final
    norm after the last layer). It proposes dispatch_v2 -> grouped matmul -> `npu_swiglu`
    -> grouped matmul -> `npu_moe_distribute_combine_add_rms_norm`, which sends the
    results back, weights and sums them (the shared expert's output goes in as
    `shared_expert_x`), adds the residual and normalises in one call. Its outputs are
    (y, rstd, x): y feeds the next layer's attention, x is the new residual.
Why
    In decode the combine's output is small and the add and the norm are two more
    kernels with a round trip of the hidden state each. The fused combine does both on
    the data it has just received.
Example
    for e in range(self.experts_start_idx, self.experts_end_idx):
        tok, k = torch.where(route_idx == e)
        routed[tok] += self.experts[e](x[tok]) * route_w[tok, k].unsqueeze(-1)
    h = h + (routed + self.shared_experts(x))     # end of layer i
    x = self.attn_norm(h)                         # start of layer i + 1
Use instead
    out = torch_npu.npu_moe_distribute_dispatch_v2(x, ids.to(torch.int32), group_ep, ep, ep_rank, E, **mc2)
    ... the grouped matmuls and npu_swiglu of moe.experts_distribute ...
    y, _, h = torch_npu.npu_moe_distribute_combine_add_rms_norm(
        hidden, ids.to(torch.int32), out[2], out[4], weights.float(), h.view(-1, 1, H),
        next_norm.weight, group_ep, ep, ep_rank, E, shared_expert_x=shared, norm_eps=eps, **mc2)
Fix safety
    Needs prerequisites: everything moe.experts_distribute needs (stacked expert weights,
    the MC2 EP group and its buffer), plus the residual threaded across the layer
    boundary: the MoE layer hands its residual and its un-normalised expert tokens to
    the next layer, whose input norm is then the fused combine's first output (the first
    layer keeps its own norm, the last one feeds the final norm). It is only for Atlas
    A3 and bfloat16, with the hidden size in [1024, 8192], at most 512 tokens per rank
    and K <= 8; shared_expert_rank_num must stay 0 (shared experts computed on every
    rank and passed as shared_expert_x). Where it does not hold, moe.experts_distribute
    with a separate norm.add_rms_norm is the same chain in two steps. The numeric check
    runs the single-rank emulation (ep_world_size 1).
References
    catalog/moe/npu_moe_distribute_combine_add_rms_norm.toml, npu_moe_distribute_dispatch_v2.toml,
    npu_grouped_matmul.toml, catalog/ffn/npu_swiglu.toml; rules moe.experts_distribute and
    norm.add_rms_norm; reference_chains.md (framework_moe_parallel: EP decode).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "moe.experts_distribute_add_rms_norm",
    "title": "expert loop (ep > 1, decode) + residual add + next RMSNorm -> dispatch_v2 + grouped_matmul + swiglu + distribute_combine_add_rms_norm (A3)",
    "module": "moe_experts",
    "apis": ["npu_moe_distribute_dispatch_v2", "npu_grouped_matmul", "npu_swiglu", "npu_moe_distribute_combine_add_rms_norm"],
    "stages": ["decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "stack_expert_weights",
         "en": "Stack the local experts' weights at load time: w_gate_up [E_local, H, 2I] (gate first) and w_down [E_local, I, H].",
         "zh": "加载时堆叠本rank专家的权重：w_gate_up [E_local, H, 2I]（gate在前）和w_down [E_local, I, H]。",
         "mechanical": True},
        {"id": "mc2_ep_group",
         "en": "Create the EP communication group for MC2 (its HCCL name is group_ep), size HCCL_BUFFSIZE for the dispatch, and pass ep_world_size, ep_rank_id and moe_expert_num.",
         "zh": "为MC2创建EP通信组（其HCCL名称即group_ep），按分发需求设置HCCL_BUFFSIZE，并传入ep_world_size、ep_rank_id和moe_expert_num。",
         "mechanical": False},
        {"id": "thread_residual",
         "en": "Thread the residual across the layer boundary: the MoE layer returns its residual and the expert tokens before the combine, and the next layer takes the fused combine's first output as its normalised input and its third output as the new residual.",
         "zh": "跨层串联残差：MoE层返回其残差和合并前的专家token，下一层以融合合并算子的第一个输出作为归一化后的输入、第三个输出作为新的残差。",
         "mechanical": False},
    ],
    "checks": ["npu_moe_distribute_dispatch_v2:*", "npu_grouped_matmul:*", "npu_swiglu:*", "npu_moe_distribute_combine_add_rms_norm:*"],
    "facts": {"moe_site": "experts", "activation": "silu", "glu_clamped": False, "ffn_gated": True, "glu_order": "separate", "group_list_type": 1},
    "when": "ep > 1",
    "hints": {"class_names": ["MoE", "DeepseekV3MoE", "Qwen3MoeSparseMoeBlock", "Block", "DecoderLayer"]},
    "inputs": {
        "tokens": {"shape": ["T", "H"], "dtype": "act"},
        "routing_weights": {"shape": ["T", "K"], "dtype": "act", "init": "uniform", "low": 0.1, "high": 1.0},
        "expert_ids": {"shape": ["T", "K"], "dtype": "int64", "init": "unique_per_row", "high": "E"},
        "gate_weights": {"shape": ["E", "I", "H"], "dtype": "act", "scale": 0.1},
        "up_weights": {"shape": ["E", "I", "H"], "dtype": "act", "scale": 0.1},
        "down_weights": {"shape": ["E", "H", "I"], "dtype": "act", "scale": 0.1},
        "num_experts": {"dtype": "param", "expr": "E"},
        "shared": {"shape": ["T", "H"], "dtype": "act", "scale": 0.1},
        "residual": {"shape": ["T", "H"], "dtype": "act"},
        "weight": {"shape": ["H"], "dtype": "act", "init": "ones_noise"},
        "eps": {"dtype": "param", "value": 1e-6},
    },
    "sizes": {"T": 6, "K": 2, "E": 16, "H": 32, "I": 48},
    "dtypes": ["float32", "bfloat16"],
    "min_torch": {"search_id_compare_f_rms_norm": "2.4"},
    "near_misses": [
        {"file": "fixtures/experts_distribute_add_rms_norm_nomatch_sum_reused.py",
         "reason": "the residual sum is read by another consumer besides the next norm and the next residual add"},
    ],
    "match": {
        "optional_inputs": ["shared"],
        "anchor_uses": [{"anchor": 1, "allow": ["add", "return"]}],
        "across_layers": True,
        "not_from": {"residual": ["mul", "div"], "weight": ["add", "sub"]},
        "explain": [
            {"when": "is also read by", "near_miss": "fixtures/experts_distribute_add_rms_norm_nomatch_sum_reused.py"},
        ],
    },
    "doc_zh": """专家并行解码中，专家循环的结果与下一层的残差相加和RMSNorm相接时，替换为MC2分发+分组矩阵乘+npu_moe_distribute_combine_add_rms_norm（A3）。

功能
    识别moe.experts_distribute的逐专家循环（one_hot或按id比较、逐专家torch.where、专家的
    SwiGLU MLP、按token累加加权结果），可另加共享专家的输出；当该和被加到残差流上、且求和
    结果被下一个RMSNorm归一化时（在解码层堆叠中即MoE层的残差相加和下一层的输入norm，或最后
    一层之后的最终norm），建议改为dispatch_v2 -> 分组矩阵乘 -> npu_swiglu -> 分组矩阵乘 ->
    npu_moe_distribute_combine_add_rms_norm：一次调用完成结果回传、加权求和（共享专家输出
    通过shared_expert_x传入）、加残差和归一化。输出为(y, rstd, x)：y送入下一层注意力，x为新
    的残差。
原因
    解码时合并结果很小，相加和归一化又是两个各需读写一遍隐藏状态的算子；融合后的合并算子
    在刚收到的数据上直接完成这两步。
示例
    for e in range(self.experts_start_idx, self.experts_end_idx):
        tok, k = torch.where(route_idx == e)
        routed[tok] += self.experts[e](x[tok]) * route_w[tok, k].unsqueeze(-1)
    h = h + (routed + self.shared_experts(x))     # 第i层末尾
    x = self.attn_norm(h)                         # 第i+1层开头
替代写法
    out = torch_npu.npu_moe_distribute_dispatch_v2(x, ids.to(torch.int32), group_ep, ep, ep_rank, E, **mc2)
    ... moe.experts_distribute中的分组矩阵乘与npu_swiglu ...
    y, _, h = torch_npu.npu_moe_distribute_combine_add_rms_norm(
        hidden, ids.to(torch.int32), out[2], out[4], weights.float(), h.view(-1, 1, H),
        next_norm.weight, group_ep, ep, ep_rank, E, shared_expert_x=shared, norm_eps=eps, **mc2)
修复安全性
    需要前置改造：moe.experts_distribute所需的全部改造（堆叠专家权重、MC2的EP通信组及其缓冲
    区），以及跨层串联残差：MoE层把残差和合并前的专家token交给下一层，下一层的输入norm改为
    融合合并算子的第一个输出（第一层保留自己的norm，最后一层接最终norm）。仅适用于Atlas A3和
    bfloat16，隐藏维在[1024, 8192]内，每rank不超过512个token，K <= 8；shared_expert_rank_num
    须为0（共享专家在每个rank上计算并作为shared_expert_x传入）。不满足时，
    moe.experts_distribute加单独的norm.add_rms_norm是分两步完成的同一条链。数值检查运行单
    rank模拟（ep_world_size为1）。
参考
    catalog/moe/npu_moe_distribute_combine_add_rms_norm.toml、npu_moe_distribute_dispatch_v2.toml、
    npu_grouped_matmul.toml、catalog/ffn/npu_swiglu.toml；规则moe.experts_distribute和
    norm.add_rms_norm；reference_chains.md（framework_moe_parallel：EP解码）。
""",
}


def search(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights, num_experts,
           shared, residual, weight, eps):
    # HF style: a one-hot mask per expert, index_add_ of the weighted rows, a written-out norm.
    combined = torch.zeros_like(tokens)
    expert_mask = F.one_hot(expert_ids, num_classes=num_experts).permute(2, 1, 0)
    for e in range(num_experts):
        slot, token_idx = torch.where(expert_mask[e])
        picked = tokens[token_idx]
        hidden = F.silu(F.linear(picked, gate_weights[e])) * F.linear(picked, up_weights[e])
        out = F.linear(hidden, down_weights[e]) * routing_weights[token_idx, slot, None]
        combined.index_add_(0, token_idx, out.to(tokens.dtype))
    summed = residual + (combined + shared)
    h32 = summed.to(torch.float32)
    h32 = h32 * torch.rsqrt(h32.pow(2).mean(-1, keepdim=True) + eps)
    return weight * h32.to(summed.dtype), summed


def search_id_compare(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights, num_experts,
                      shared, residual, weight, eps):
    # Reference-implementation style: tokens found by comparing ids, accumulated by indexing.
    routed = torch.zeros_like(tokens)
    for e in range(num_experts):
        tok, slot = torch.where(expert_ids == e)
        picked = tokens[tok]
        hidden = F.silu(F.linear(picked, gate_weights[e])) * F.linear(picked, up_weights[e])
        routed[tok] += F.linear(hidden, down_weights[e]) * routing_weights[tok, slot].unsqueeze(-1)
    summed = residual + (routed + shared)
    x = summed.float()
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return (x * weight).type_as(summed), summed


def search_id_compare_new_axis(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights,
                               num_experts, shared, residual, weight, eps):
    # Ids compared as in search_id_compare, the weight's trailing axis added by indexing with None.
    routed = torch.zeros_like(tokens)
    for e in range(num_experts):
        tok, slot = torch.where(expert_ids == e)
        hidden = F.silu(F.linear(tokens[tok], gate_weights[e])) * F.linear(tokens[tok], up_weights[e])
        routed[tok] += F.linear(hidden, down_weights[e]) * routing_weights[tok, slot, None]
    summed = residual + (routed + shared)
    x = summed.float()
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return (x * weight).type_as(summed), summed


def search_id_compare_f_rms_norm(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights,
                                 num_experts, shared, residual, weight, eps):
    # DeepSeek's reference code: weights indexed with None, and the next Block's norm is F.rms_norm.
    routed = torch.zeros_like(tokens)
    for e in range(num_experts):
        tok, slot = torch.where(expert_ids == e)
        hidden = F.silu(F.linear(tokens[tok], gate_weights[e])) * F.linear(tokens[tok], up_weights[e])
        routed[tok] += F.linear(hidden, down_weights[e]) * routing_weights[tok, slot, None]
    summed = residual + (routed + shared)
    return F.rms_norm(summed, (summed.shape[-1],), weight, eps), summed


def search_sized_accumulator(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights,
                             num_experts, shared, residual, weight, eps):
    # HF Qwen3-MoE / Mixtral style: the sum allocated from the token and hidden sizes, not zeros_like.
    rows, width = tokens.shape
    combined = torch.zeros((rows, width), dtype=tokens.dtype, device=tokens.device)
    expert_mask = F.one_hot(expert_ids, num_classes=num_experts).permute(2, 1, 0)
    for e in range(num_experts):
        slot, token_idx = torch.where(expert_mask[e])
        picked = tokens[token_idx]
        hidden = F.silu(F.linear(picked, gate_weights[e])) * F.linear(picked, up_weights[e])
        out = F.linear(hidden, down_weights[e]) * routing_weights[token_idx, slot, None]
        combined.index_add_(0, token_idx, out.to(tokens.dtype))
    summed = residual + (combined + shared)
    x32 = summed.to(torch.float32)
    inv_rms = torch.rsqrt(x32.square().mean(-1, keepdim=True) + eps)
    return weight * (x32 * inv_rms).to(summed.dtype), summed


def replace(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights, num_experts,
            shared, residual, weight, eps):
    ids = expert_ids.to(torch.int32)
    sent = torch_npu.npu_moe_distribute_dispatch_v2(tokens, ids, "ep_group", 1, 0, num_experts)
    expand_x, assist_info, per_expert, ep_counts = sent[0], sent[2], sent[3], sent[4]
    gate_up = torch.cat([gate_weights, up_weights], dim=1).transpose(1, 2)
    hidden = torch_npu.npu_grouped_matmul([expand_x], [gate_up], group_list=per_expert, group_type=0,
                                          group_list_type=1, split_item=2)[0]
    hidden = torch_npu.npu_swiglu(hidden, dim=-1)
    out = torch_npu.npu_grouped_matmul([hidden], [down_weights.transpose(1, 2)], group_list=per_expert,
                                       group_type=0, group_list_type=1, split_item=2)[0]
    rows, width = residual.shape
    normed, _, summed = torch_npu.npu_moe_distribute_combine_add_rms_norm(
        out, ids, assist_info, ep_counts, routing_weights.float(), residual.reshape(rows, 1, width), weight,
        "ep_group", 1, 0, num_experts, shared_expert_x=shared, norm_eps=eps)
    return normed.reshape(rows, width), summed.reshape(rows, width)
