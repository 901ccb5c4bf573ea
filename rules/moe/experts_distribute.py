"""Per-expert loop under expert parallelism becomes MC2 dispatch + grouped matmul + SwiGLU + combine (decode).

What it does
    Finds the same HF-style expert loop as moe.experts_grouped_matmul (`one_hot`,
    `torch.where` per expert, the expert's SwiGLU MLP, `index_add_` of the weighted
    result) and, when the experts are spread over EP ranks (ep > 1), proposes the decode
    chain of the reference ports: `npu_moe_distribute_dispatch_v2` (tokens sent to the
    ranks that own their experts, sorted by local expert, with per-expert counts) ->
    `npu_grouped_matmul` (`group_list_type=1`) -> `npu_swiglu` -> `npu_grouped_matmul`
    -> `npu_moe_distribute_combine_v2` (results sent back and mixed with the routing
    weights). A shared expert computed on every rank is added after the call: the
    combine's `shared_expert_x` is for shared experts on ranks of their own.
Why
    In decode every rank holds a few tokens and a share of the experts. The MC2
    operators fuse the all-to-all with the sort and the weighted sum, so the expert
    traffic overlaps with compute instead of two collective calls around a Python loop.
Example
    for e in range(self.experts_start_idx, self.experts_end_idx):
        tok, k = torch.where(route_idx == e)
        routed[tok] += self.experts[e](x[tok]) * route_w[tok, k].unsqueeze(-1)
Use instead
    out = torch_npu.npu_moe_distribute_dispatch_v2(x, ids.to(torch.int32), group_ep, ep, ep_rank, E, **mc2)
    h = torch_npu.npu_grouped_matmul([out[0]], [w_gate_up], group_list=out[3],
                                     group_type=0, group_list_type=1, split_item=2)[0]
    h = torch_npu.npu_grouped_matmul([torch_npu.npu_swiglu(h, dim=-1)], [w_down], group_list=out[3],
                                     group_type=0, group_list_type=1, split_item=2)[0]
    y = torch_npu.npu_moe_distribute_combine_v2(h, ids.to(torch.int32), out[2], out[4],
                                                weights.float(), group_ep, ep, ep_rank, E, **mc2)
Fix safety
    Needs prerequisites: stacked expert weights (as in moe.experts_grouped_matmul), an
    HCCL group for EP registered for MC2 and its buffer sized (`HCCL_BUFFSIZE`), and
    decode batches within the operator's token limit. The checks carry the chip rules:
    on A2 at most 24 experts per rank (`moe_expert_num / (ep - shared_expert_rank_num)`;
    256 experts over EP 8 is 32 and fails), the EP sizes, hidden size and batch limits
    per communication algorithm. Where they fail, the fallback is the prefill-style
    double routing (`npu_moe_init_routing_v2` + all_to_all + `npu_moe_re_routing` +
    grouped matmul + `npu_moe_finalize_routing`) or local experts with an all-reduce.
    The numeric check runs the single-rank emulation of the two operators
    (ep_world_size 1), which proves the sort, count and weighted-sum contract but not
    the communication.
References
    catalog/moe/npu_moe_distribute_dispatch_v2.toml, npu_moe_distribute_combine_v2.toml,
    npu_grouped_matmul.toml, catalog/ffn/npu_swiglu.toml; reference_chains.md
    (framework_moe_parallel: EP decode, A2 limit of 24 experts per rank, fallbacks).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "moe.experts_distribute",
    "title": "expert loop with ep > 1 (decode) -> distribute_dispatch_v2 + grouped_matmul + swiglu + distribute_combine_v2",
    "module": "moe_experts",
    "apis": ["npu_moe_distribute_dispatch_v2", "npu_grouped_matmul", "npu_swiglu", "npu_moe_distribute_combine_v2"],
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
    ],
    "checks": ["npu_moe_distribute_dispatch_v2:*", "npu_grouped_matmul:*", "npu_swiglu:*", "npu_moe_distribute_combine_v2:*"],
    "facts": {"moe_site": "experts", "activation": "silu", "glu_clamped": False, "ffn_gated": True, "glu_order": "separate", "group_list_type": 1},
    "when": "ep > 1",
    "hints": {"class_names": ["MoE", "DeepseekV3MoE", "Qwen3MoeSparseMoeBlock"]},
    "inputs": {
        "tokens": {"shape": ["T", "H"], "dtype": "act"},
        "routing_weights": {"shape": ["T", "K"], "dtype": "act", "init": "uniform", "low": 0.1, "high": 1.0},
        "expert_ids": {"shape": ["T", "K"], "dtype": "int64", "init": "unique_per_row", "high": "E"},
        "gate_weights": {"shape": ["E", "I", "H"], "dtype": "act", "scale": 0.1},
        "up_weights": {"shape": ["E", "I", "H"], "dtype": "act", "scale": 0.1},
        "down_weights": {"shape": ["E", "H", "I"], "dtype": "act", "scale": 0.1},
        "num_experts": {"dtype": "param", "expr": "E"},
    },
    "sizes": {"T": 6, "K": 2, "E": 16, "H": 32, "I": 48},
    "dtypes": ["float32", "bfloat16"],
    "near_misses": [
        {"file": "fixtures/experts_distribute_nomatch_clamped_swiglu.py",
         "reason": "the experts clamp gate and up and offset up by 1 (GPT-OSS SwiGLU): npu_swiglu would change the numbers"},
    ],
    "match": {
        "explain": [
            {"when": "expected silu(...), found mul(", "near_miss": "fixtures/experts_distribute_nomatch_clamped_swiglu.py"},
        ],
    },
    "doc_zh": """专家并行下的逐专家循环，替换为MC2分发+分组矩阵乘+SwiGLU+合并（解码）。

功能
    识别与moe.experts_grouped_matmul相同的HF式专家循环（one_hot、逐专家torch.where、专家的
    SwiGLU MLP、对加权结果index_add_），当专家分布在多个EP rank上（ep > 1）时，建议改为参考
    移植的解码链：npu_moe_distribute_dispatch_v2（把token发往拥有其专家的rank，按本地专家排序
    并给出每个专家的token数）-> npu_grouped_matmul（group_list_type=1）-> npu_swiglu ->
    npu_grouped_matmul -> npu_moe_distribute_combine_v2（结果发回并按路由权重加权求和）。在每个
    rank上计算的共享专家在调用后相加：combine的shared_expert_x用于部署在独立rank上的共享专家。
原因
    解码时每个rank只有少量token和一部分专家。MC2算子把all-to-all与排序、加权求和融合在一起，
    专家通信与计算重叠，而不是在Python循环两侧各做一次集合通信。
示例
    for e in range(self.experts_start_idx, self.experts_end_idx):
        tok, k = torch.where(route_idx == e)
        routed[tok] += self.experts[e](x[tok]) * route_w[tok, k].unsqueeze(-1)
替代写法
    out = torch_npu.npu_moe_distribute_dispatch_v2(x, ids.to(torch.int32), group_ep, ep, ep_rank, E, **mc2)
    h = torch_npu.npu_grouped_matmul([out[0]], [w_gate_up], group_list=out[3],
                                     group_type=0, group_list_type=1, split_item=2)[0]
    h = torch_npu.npu_grouped_matmul([torch_npu.npu_swiglu(h, dim=-1)], [w_down], group_list=out[3],
                                     group_type=0, group_list_type=1, split_item=2)[0]
    y = torch_npu.npu_moe_distribute_combine_v2(h, ids.to(torch.int32), out[2], out[4],
                                                weights.float(), group_ep, ep, ep_rank, E, **mc2)
修复安全性
    需要前置改造：堆叠专家权重（同moe.experts_grouped_matmul）、为MC2注册EP的HCCL通信组并
    设置缓冲区大小（HCCL_BUFFSIZE），且解码批大小在算子的token上限内。检查项包含各芯片规则：
    A2上每个rank最多24个专家（moe_expert_num / (ep - shared_expert_rank_num)；256个专家在
    EP 8上为32，不满足），以及各通信算法下的EP规模、隐藏维和批大小限制。不满足时的回退方案是
    预填充式的双路由（npu_moe_init_routing_v2 + all_to_all + npu_moe_re_routing + 分组矩阵乘 +
    npu_moe_finalize_routing）或本地专家加all-reduce。数值检查运行两个算子的单rank模拟
    （ep_world_size为1），验证排序、计数和加权求和的约定，但不验证通信。
参考
    catalog/moe/npu_moe_distribute_dispatch_v2.toml、npu_moe_distribute_combine_v2.toml、
    npu_grouped_matmul.toml、catalog/ffn/npu_swiglu.toml；reference_chains.md
    （framework_moe_parallel：EP解码、A2每rank 24个专家的上限、回退方案）。
""",
}


def search(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights, num_experts):
    combined = torch.zeros_like(tokens)
    expert_mask = F.one_hot(expert_ids, num_classes=num_experts).permute(2, 1, 0)
    for e in range(num_experts):
        slot, token_idx = torch.where(expert_mask[e])
        picked = tokens[token_idx]
        hidden = F.silu(F.linear(picked, gate_weights[e])) * F.linear(picked, up_weights[e])
        out = F.linear(hidden, down_weights[e]) * routing_weights[token_idx, slot, None]
        combined.index_add_(0, token_idx, out.to(tokens.dtype))
    return combined


def search_id_compare(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights, num_experts):
    # Reference-implementation style: tokens found by comparing ids, accumulated by indexing.
    routed = torch.zeros_like(tokens)
    for e in range(num_experts):
        tok, slot = torch.where(expert_ids == e)
        picked = tokens[tok]
        hidden = F.silu(F.linear(picked, gate_weights[e])) * F.linear(picked, up_weights[e])
        routed[tok] += F.linear(hidden, down_weights[e]) * routing_weights[tok, slot].unsqueeze(-1)
    return routed


def search_id_compare_new_axis(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights, num_experts):
    # Ids compared as in search_id_compare, the weight's trailing axis added by indexing with None.
    routed = torch.zeros_like(tokens)
    for e in range(num_experts):
        tok, slot = torch.where(expert_ids == e)
        hidden = F.silu(F.linear(tokens[tok], gate_weights[e])) * F.linear(tokens[tok], up_weights[e])
        routed[tok] += F.linear(hidden, down_weights[e]) * routing_weights[tok, slot, None]
    return routed


def search_token_major_mask(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights, num_experts):
    # The mask laid out [E, T, K]: torch.where gives (token, slot), the weights are read per pair.
    combined = torch.zeros_like(tokens)
    expert_mask = F.one_hot(expert_ids, num_classes=num_experts).permute(2, 0, 1)
    for e in range(num_experts):
        token_idx, slot = torch.where(expert_mask[e])
        picked = tokens[token_idx]
        hidden = F.silu(F.linear(picked, gate_weights[e])) * F.linear(picked, up_weights[e])
        out = F.linear(hidden, down_weights[e]) * routing_weights[token_idx, slot].unsqueeze(-1)
        combined.index_add_(0, token_idx, out)
    return combined


def search_sized_accumulator(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights, num_experts):
    # The output allocated from the token and hidden sizes (torch.zeros((T, H), ...)) rather than zeros_like.
    rows, width = tokens.shape
    combined = torch.zeros((rows, width), dtype=tokens.dtype, device=tokens.device)
    expert_mask = F.one_hot(expert_ids, num_classes=num_experts).permute(2, 1, 0)
    for e in range(num_experts):
        slot, token_idx = torch.where(expert_mask[e])
        picked = tokens[token_idx]
        hidden = F.silu(F.linear(picked, gate_weights[e])) * F.linear(picked, up_weights[e])
        out = F.linear(hidden, down_weights[e]) * routing_weights[token_idx, slot, None]
        combined.index_add_(0, token_idx, out.to(tokens.dtype))
    return combined


def replace(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights, num_experts):
    ids = expert_ids.to(torch.int32)
    sent = torch_npu.npu_moe_distribute_dispatch_v2(tokens, ids, "ep_group", 1, 0, num_experts)
    expand_x, assist_info, per_expert, ep_counts = sent[0], sent[2], sent[3], sent[4]
    gate_up = torch.cat([gate_weights, up_weights], dim=1).transpose(1, 2)
    hidden = torch_npu.npu_grouped_matmul([expand_x], [gate_up], group_list=per_expert, group_type=0,
                                          group_list_type=1, split_item=2)[0]
    hidden = torch_npu.npu_swiglu(hidden, dim=-1)
    out = torch_npu.npu_grouped_matmul([hidden], [down_weights.transpose(1, 2)], group_list=per_expert,
                                       group_type=0, group_list_type=1, split_item=2)[0]
    return torch_npu.npu_moe_distribute_combine_v2(out, ids, assist_info, ep_counts, routing_weights.float(),
                                                   "ep_group", 1, 0, num_experts)
