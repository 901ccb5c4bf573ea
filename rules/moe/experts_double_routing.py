"""Per-expert loop under expert parallelism in prefill becomes double routing: init_routing_v2 + all_to_all + re_routing + grouped matmul + finalize.

What it does
    Finds the HF-style expert loop (`one_hot` of the chosen ids, `torch.where` per
    expert, the expert's SwiGLU MLP, `index_add_` of the weighted rows) and, when the
    experts are spread over EP ranks (ep > 1) in prefill, proposes the double-routing
    chain of the reference ports: `npu_moe_init_routing_v2` sorts the local tokens by
    expert and counts them, an all_to_all sends each expert's rows to the rank that owns
    it, `npu_moe_re_routing` regroups what arrived (rank-major) by local expert,
    `npu_grouped_matmul` + `npu_swiglu` + `npu_grouped_matmul` run the local experts,
    the rows are put back in arrival order and returned with a second all_to_all, and
    `npu_moe_finalize_routing` applies the routing weights in token order.
Why
    Prefill batches are too large for the MC2 dispatch/combine pair (its token limits
    and buffer size are sized for decode), so the reference ports route twice: one
    sort before the exchange and one regroup after it. Each step is one kernel
    instead of a Python loop of per-expert GEMMs and index kernels.
Example
    mask = F.one_hot(ids, num_classes=E).permute(2, 1, 0)
    for e in range(E):
        slot, tok = torch.where(mask[e])
        out.index_add_(0, tok, self.experts[e](x[tok]) * weights[tok, slot, None])
Use instead
    rows, row_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        x, ids.to(torch.int32), active_num=T * K, expert_num=E, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, E])
    got = all_to_all(rows, counts)               # counts per (source rank, local expert)
    local, _, back_idx, local_counts = torch_npu.npu_moe_re_routing(got, got_counts)
    h = torch_npu.npu_grouped_matmul([local], [w_gate_up], group_list=local_counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    h = torch_npu.npu_grouped_matmul([torch_npu.npu_swiglu(h, dim=-1)], [w_down],
                                     group_list=local_counts, group_type=0, group_list_type=1,
                                     split_item=2)[0]
    rows = all_to_all_back(h[inverse(back_idx)])
    out = torch_npu.npu_moe_finalize_routing(rows, shared, None, None, weights, row_map,
                                             ids.to(torch.int32), drop_pad_mode=2)
Fix safety
    Needs prerequisites: the local experts' weights stacked at load time, and the two
    all_to_all exchanges written with the per-rank counts (the counts exchange comes
    first, so each rank knows how many rows it receives). `npu_moe_re_routing` takes
    counts only (`expert_token_num_type=1`) and gives a gather index (`idx_type=0`):
    the rows go back to arrival order through that index before the second exchange.
    `group_list_type=1` pairs with the count outputs, `drop_pad_mode=2` with the
    token-major index map of init_routing_v2. Only for SwiGLU experts without a clamp.
    A shared expert's output added to the routed sum goes in as `skip1` of the finalize
    call (each rank computes it for its own tokens); a model without one matches without
    that step and passes None. The numeric
    check runs one rank (the exchanges are identities), which proves the sort, regroup,
    count and weighted-sum contract but not the communication.
References
    catalog/moe/npu_moe_init_routing_v2.toml, npu_moe_re_routing.toml,
    npu_grouped_matmul.toml, npu_moe_finalize_routing.toml, catalog/ffn/npu_swiglu.toml;
    reference_chains.md (framework_moe_parallel: EP prefill double routing).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "moe.experts_double_routing",
    "title": "expert loop with ep > 1 (prefill) -> init_routing_v2 + all_to_all + re_routing + grouped_matmul + swiglu + finalize_routing",
    "module": "moe_experts",
    "apis": ["npu_moe_init_routing_v2", "npu_moe_re_routing", "npu_grouped_matmul", "npu_swiglu",
             "npu_moe_finalize_routing"],
    "stages": ["prefill"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "stack_expert_weights",
         "en": "Stack the local experts' weights at load time: w_gate_up [E_local, H, 2I] (gate first) and w_down [E_local, I, H]; drop the per-expert ModuleList.",
         "zh": "加载时堆叠本rank专家的权重：w_gate_up [E_local, H, 2I]（gate在前）和w_down [E_local, I, H]；去掉逐专家的ModuleList。",
         "mechanical": True},
        {"id": "ep_all_to_all",
         "en": "Write the EP exchange: an all_to_all of the per-expert counts, then of the sorted rows to the owning ranks, and the reverse all_to_all of the expert outputs before finalize_routing.",
         "zh": "编写EP数据交换：先all_to_all交换每专家计数，再把排序后的行发往拥有专家的rank，finalize_routing之前再用反向all_to_all取回专家输出。",
         "mechanical": False},
    ],
    "checks": ["npu_moe_init_routing_v2:*", "npu_moe_re_routing:*", "npu_grouped_matmul:*", "npu_swiglu:*",
               "npu_moe_finalize_routing:*"],
    "facts": {"moe_site": "experts", "activation": "silu", "glu_clamped": False, "ffn_gated": True, "glu_order": "separate",
              "expert_tokens_num_type": 1, "group_list_type": 1},
    "when": "ep > 1",
    "hints": {"class_names": ["MixtralSparseMoeBlock", "Qwen3MoeSparseMoeBlock", "DeepseekV3MoE", "MoE"]},
    "inputs": {
        "tokens": {"shape": ["T", "H"], "dtype": "act"},
        "routing_weights": {"shape": ["T", "K"], "dtype": "act", "init": "uniform", "low": 0.1, "high": 1.0},
        "expert_ids": {"shape": ["T", "K"], "dtype": "int64", "init": "unique_per_row", "high": "E"},
        "gate_weights": {"shape": ["E", "I", "H"], "dtype": "act", "scale": 0.1},
        "up_weights": {"shape": ["E", "I", "H"], "dtype": "act", "scale": 0.1},
        "down_weights": {"shape": ["E", "H", "I"], "dtype": "act", "scale": 0.1},
        "num_experts": {"dtype": "param", "expr": "E"},
        "shared": {"shape": ["T", "H"], "dtype": "act", "scale": 0.1},
    },
    "sizes": {"T": 8, "K": 2, "E": 20, "H": 32, "I": 48},
    "dtypes": ["float32", "bfloat16"],
    "near_misses": [
        {"file": "fixtures/experts_double_routing_nomatch_clamped_swiglu.py",
         "reason": "the experts clamp gate and up and offset up by 1 (GPT-OSS SwiGLU): npu_swiglu would change the numbers"},
    ],
    "match": {
        "optional_inputs": ["shared"],
        # A shared expert's output is its down projection (or that scaled by a gate), never a
        # residual sum: a model without one adds the routed sum to the residual stream.
        "not_from": {"shared": ["add"]},
        "explain": [
            {"when": "expected silu(...), found mul(", "near_miss": "fixtures/experts_double_routing_nomatch_clamped_swiglu.py"},
        ],
    },
    "doc_zh": """专家并行预填充中的逐专家循环，替换为双路由：init_routing_v2 + all_to_all + re_routing + 分组矩阵乘 + finalize。

功能
    识别HF式专家循环（对所选专家编号做one_hot、逐专家torch.where、专家的SwiGLU MLP、对加权
    结果index_add_），当专家分布在多个EP rank上（ep > 1）且处于预填充阶段时，建议改为参考移植
    的双路由链：npu_moe_init_routing_v2按专家排序本地token并计数，all_to_all把各专家的行发往
    拥有该专家的rank，npu_moe_re_routing把收到的（按rank排列的）行按本地专家重新分组，
    npu_grouped_matmul + npu_swiglu + npu_grouped_matmul计算本地专家，结果恢复为到达顺序后
    用第二次all_to_all发回，最后npu_moe_finalize_routing按token顺序乘路由权重。
原因
    预填充批次对MC2分发/合并算子过大（其token上限和缓冲区按解码设计），因此参考移植做两次路由：
    交换前排序一次，交换后重新分组一次。每一步都是一个内核，而不是逐专家GEMM和索引内核的
    Python循环。
示例
    mask = F.one_hot(ids, num_classes=E).permute(2, 1, 0)
    for e in range(E):
        slot, tok = torch.where(mask[e])
        out.index_add_(0, tok, self.experts[e](x[tok]) * weights[tok, slot, None])
替代写法
    rows, row_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        x, ids.to(torch.int32), active_num=T * K, expert_num=E, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, E])
    got = all_to_all(rows, counts)               # 按(源rank, 本地专家)的计数
    local, _, back_idx, local_counts = torch_npu.npu_moe_re_routing(got, got_counts)
    h = torch_npu.npu_grouped_matmul([local], [w_gate_up], group_list=local_counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    h = torch_npu.npu_grouped_matmul([torch_npu.npu_swiglu(h, dim=-1)], [w_down],
                                     group_list=local_counts, group_type=0, group_list_type=1,
                                     split_item=2)[0]
    rows = all_to_all_back(h[inverse(back_idx)])
    out = torch_npu.npu_moe_finalize_routing(rows, shared, None, None, weights, row_map,
                                             ids.to(torch.int32), drop_pad_mode=2)
修复安全性
    需要前置改造：加载时堆叠本rank专家的权重，并按每rank计数编写两次all_to_all（先交换计数，
    每个rank才知道要接收多少行）。npu_moe_re_routing只接受计数（expert_token_num_type=1），
    给出gather索引（idx_type=0）：第二次交换前要通过该索引把行恢复为到达顺序。
    group_list_type=1与计数输出配对，drop_pad_mode=2与init_routing_v2按token排列的索引映射
    配对。仅适用于不带clamp的SwiGLU专家。加到路由结果上的共享专家输出作为finalize的skip1传入（每个rank
    为自己的token计算）；没有共享专家的模型匹配时跳过这一步，传入None。数值检查
    只运行一个rank（交换为恒等），验证排序、重分组、计数和加权求和的约定，但不验证通信。
参考
    catalog/moe/npu_moe_init_routing_v2.toml、npu_moe_re_routing.toml、
    npu_grouped_matmul.toml、npu_moe_finalize_routing.toml、catalog/ffn/npu_swiglu.toml；
    reference_chains.md（framework_moe_parallel：EP预填充双路由）。
""",
}


def search(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights, num_experts, shared):
    combined = torch.zeros_like(tokens)
    expert_mask = F.one_hot(expert_ids, num_classes=num_experts).permute(2, 1, 0)
    for e in range(num_experts):
        slot, token_idx = torch.where(expert_mask[e])
        picked = tokens[token_idx]
        hidden = F.silu(F.linear(picked, gate_weights[e])) * F.linear(picked, up_weights[e])
        out = F.linear(hidden, down_weights[e]) * routing_weights[token_idx, slot, None]
        combined.index_add_(0, token_idx, out.to(tokens.dtype))
    return combined + shared


def search_id_compare(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights,
                      num_experts, shared):
    # Reference-implementation style: tokens found by comparing ids, accumulated by indexing.
    routed = torch.zeros_like(tokens)
    for e in range(num_experts):
        tok, slot = torch.where(expert_ids == e)
        picked = tokens[tok]
        hidden = F.silu(F.linear(picked, gate_weights[e])) * F.linear(picked, up_weights[e])
        routed[tok] += F.linear(hidden, down_weights[e]) * routing_weights[tok, slot].unsqueeze(-1)
    return routed + shared


def search_id_compare_new_axis(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights,
                               num_experts, shared):
    # Ids compared as in search_id_compare, the weight's trailing axis added by indexing with None.
    routed = torch.zeros_like(tokens)
    for e in range(num_experts):
        tok, slot = torch.where(expert_ids == e)
        hidden = F.silu(F.linear(tokens[tok], gate_weights[e])) * F.linear(tokens[tok], up_weights[e])
        routed[tok] += F.linear(hidden, down_weights[e]) * routing_weights[tok, slot, None]
    return routed + shared


def search_token_major_mask(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights,
                            num_experts, shared):
    # The mask laid out [E, T, K]: torch.where gives (token, slot), the weights are read per pair.
    combined = torch.zeros_like(tokens)
    expert_mask = F.one_hot(expert_ids, num_classes=num_experts).permute(2, 0, 1)
    for e in range(num_experts):
        token_idx, slot = torch.where(expert_mask[e])
        picked = tokens[token_idx]
        hidden = F.silu(F.linear(picked, gate_weights[e])) * F.linear(picked, up_weights[e])
        out = F.linear(hidden, down_weights[e]) * routing_weights[token_idx, slot].unsqueeze(-1)
        combined.index_add_(0, token_idx, out)
    return combined + shared


def search_sized_accumulator(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights,
                             num_experts, shared):
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
    return combined + shared


def replace(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights, num_experts, shared):
    rows, k = expert_ids.shape
    ids = expert_ids.to(torch.int32)
    sorted_rows, row_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        tokens, ids, active_num=rows * k, expert_num=num_experts, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, num_experts])
    # One rank: the all_to_all hands the sorted rows and the counts over unchanged.
    received, received_counts = sorted_rows, counts.reshape(1, num_experts)
    local, _, gather_idx, local_counts = torch_npu.npu_moe_re_routing(received, received_counts)
    gate_up = torch.cat([gate_weights, up_weights], dim=1).transpose(1, 2)
    hidden = torch_npu.npu_grouped_matmul([local], [gate_up], group_list=local_counts, group_type=0,
                                          group_list_type=1, split_item=2)[0]
    hidden = torch_npu.npu_swiglu(hidden, dim=-1)
    out = torch_npu.npu_grouped_matmul([hidden], [down_weights.transpose(1, 2)], group_list=local_counts,
                                       group_type=0, group_list_type=1, split_item=2)[0]
    # Back to arrival order before the return all_to_all (an identity on one rank).
    arrival = torch.empty_like(out)
    arrival[gather_idx.long()] = out
    return torch_npu.npu_moe_finalize_routing(arrival, shared, None, None, routing_weights.to(out.dtype), row_map, ids,
                                              drop_pad_mode=2)


def naive_k_major_map(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights,
                      num_experts, shared):
    # The finalize call told drop_pad_mode=0 (a k-major index map) while init_routing_v2
    # wrote a token-major one: every token gathers other tokens' rows.
    rows, k = expert_ids.shape
    ids = expert_ids.to(torch.int32)
    sorted_rows, row_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        tokens, ids, active_num=rows * k, expert_num=num_experts, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, num_experts])
    local, _, gather_idx, local_counts = torch_npu.npu_moe_re_routing(sorted_rows, counts.reshape(1, num_experts))
    gate_up = torch.cat([gate_weights, up_weights], dim=1).transpose(1, 2)
    hidden = torch_npu.npu_grouped_matmul([local], [gate_up], group_list=local_counts, group_type=0,
                                          group_list_type=1, split_item=2)[0]
    hidden = torch_npu.npu_swiglu(hidden, dim=-1)
    out = torch_npu.npu_grouped_matmul([hidden], [down_weights.transpose(1, 2)], group_list=local_counts,
                                       group_type=0, group_list_type=1, split_item=2)[0]
    arrival = torch.empty_like(out)
    arrival[gather_idx.long()] = out
    return torch_npu.npu_moe_finalize_routing(arrival, shared, None, None, routing_weights.to(out.dtype), row_map, ids,
                                              drop_pad_mode=0)
