"""Per-expert loop over routed tokens becomes routing + grouped matmul + SwiGLU + finalize (one device).

What it does
    Finds the HF-style expert loop: a `one_hot` of the chosen expert ids, one pass per
    expert that picks its tokens with `torch.where`, runs that expert's SwiGLU MLP on
    them, weights the result by the token's routing weight and adds it back with
    `index_add_`. It proposes the single-device (TP or no parallelism) chain of the
    reference ports: `npu_moe_init_routing_v2` (tokens sorted by expert, counts per
    expert) -> `npu_grouped_matmul` with the stacked `[gate, up]` weights ->
    `npu_swiglu` -> `npu_grouped_matmul` with the stacked down weights ->
    `npu_moe_finalize_routing` (weights applied, rows put back in token order).
Why
    A Python loop over every expert launches three GEMMs and several index kernels per
    expert and synchronises on `torch.where`; with 64 to 256 experts that is hundreds
    of small launches per layer. The grouped matmul runs all experts in one kernel over
    contiguous token groups. This is the MoE chain of the TP and single-device setups
    in prefill and decode.
Example
    mask = F.one_hot(ids, num_classes=E).permute(2, 1, 0)
    for e in range(E):
        slot, tok = torch.where(mask[e])
        out.index_add_(0, tok, self.experts[e](x[tok]) * weights[tok, slot, None])
Use instead
    rows, idx_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        x, ids.to(torch.int32), active_num=T * K, expert_num=E, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, E])
    h = torch_npu.npu_grouped_matmul([rows], [w_gate_up], group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    h = torch_npu.npu_grouped_matmul([torch_npu.npu_swiglu(h, dim=-1)], [w_down], group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    out = torch_npu.npu_moe_finalize_routing(h, shared, None, None, weights, idx_map,
                                             ids.to(torch.int32), drop_pad_mode=2)
Fix safety
    Needs prerequisites. The experts' weights must be stacked at load time into
    `[E, H, 2I]` (gate first, then up, transposed to (K, N)) and `[E, I, H]`; the loop's
    `ModuleList` of experts goes. `group_list_type=1` must pair with
    `expert_tokens_num_type=1` (counts, not a cumulative sum), and
    `drop_pad_mode=2` with the token-major index map of `row_idx_type=0`. Only for
    SwiGLU experts without a clamp (a clamped GPT-OSS expert keeps its activation in
    torch). The rule holds for any TP size; with expert parallelism (ep > 1) the
    prefill chain adds an all_to_all and `npu_moe_re_routing` between the routing op
    and the grouped matmul (`moe.experts_double_routing`), and decode prefers the MC2 chain
    of `moe.experts_distribute`.
    A shared expert's output added to the routed sum (`routed + self.shared_experts(x)`,
    gated or not) goes in as `skip1` of the finalize call, which adds it; a model without
    one matches without that step and passes None.
References
    catalog/moe/npu_moe_init_routing_v2.toml, npu_grouped_matmul.toml,
    npu_moe_finalize_routing.toml, catalog/ffn/npu_swiglu.toml; reference_chains.md
    (framework_moe_parallel: TP mode and parameter cheat sheet).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "moe.experts_grouped_matmul",
    "title": "expert loop (one_hot/where/index_add_) -> init_routing_v2 + grouped_matmul + swiglu + finalize_routing",
    "module": "moe_experts",
    "apis": ["npu_moe_init_routing_v2", "npu_grouped_matmul", "npu_swiglu", "npu_moe_finalize_routing"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "stack_expert_weights",
         "en": "Stack the experts' weights at load time: w_gate_up [E, H, 2I] = cat([W_gate_e, W_up_e], 0).T per expert (gate first) and w_down [E, I, H]; drop the per-expert ModuleList.",
         "zh": "加载时堆叠各专家权重：w_gate_up [E, H, 2I]为每个专家cat([W_gate_e, W_up_e], 0)的转置（gate在前），w_down [E, I, H]；去掉逐专家的ModuleList。",
         "mechanical": True},
        {"id": "int32_expert_ids",
         "en": "Pass the router's expert ids as int32 (the top-k gives int64).",
         "zh": "路由器的专家编号以int32传入（topk给出的是int64）。",
         "mechanical": True},
    ],
    "checks": ["npu_moe_init_routing_v2:*", "npu_grouped_matmul:*", "npu_swiglu:*", "npu_moe_finalize_routing:*"],
    "facts": {"moe_site": "experts", "activation": "silu", "glu_clamped": False, "ffn_gated": True, "glu_order": "separate",
              "expert_tokens_num_type": 1, "group_list_type": 1},
    "hints": {"class_names": ["MixtralSparseMoeBlock", "Qwen3MoeSparseMoeBlock", "Qwen2MoeSparseMoeBlock", "DeepseekV3MoE"]},
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
    "sizes": {"T": 10, "K": 2, "E": 24, "H": 32, "I": 48},
    "dtypes": ["float32", "bfloat16"],
    "near_misses": [
        {"file": "fixtures/experts_grouped_matmul_nomatch_clamped_swiglu.py",
         "reason": "the experts clamp gate and up and offset up by 1 (GPT-OSS SwiGLU): npu_swiglu would change the numbers"},
        {"file": "fixtures/experts_grouped_matmul_nomatch_dense_all_experts.py",
         "reason": "every expert runs on every token and the outputs are mixed by a dense weight matrix: no routing to replace"},
    ],
    "match": {
        "optional_inputs": ["shared"],
        # A shared expert's output is its down projection (or that scaled by a gate), never a
        # residual sum: a model without one adds the routed sum to the residual stream.
        "not_from": {"shared": ["add"]},
        "lookalikes": {"lookalike_dense_all_experts": {
            "near_miss": "fixtures/experts_grouped_matmul_nomatch_dense_all_experts.py",
            "inputs": {"dense_weights": {"shape": ["T", "E"], "dtype": "act", "init": "uniform", "low": 0.0, "high": 1.0}}}},
        "explain": [
            {"when": "expected silu(...), found mul(", "near_miss": "fixtures/experts_grouped_matmul_nomatch_clamped_swiglu.py"},
        ],
    },
    "doc_zh": """逐专家遍历路由token的循环，替换为路由+分组矩阵乘+SwiGLU+还原（单设备）。

功能
    识别HF式专家循环：对所选专家编号做one_hot，逐个专家用torch.where取出其token，运行该专家的
    SwiGLU MLP，乘以token的路由权重后用index_add_累加回去。建议改为参考移植中单设备（TP或无并行）
    的链：npu_moe_init_routing_v2（按专家排序token并统计每个专家的token数）->
    用堆叠的[gate, up]权重做npu_grouped_matmul -> npu_swiglu -> 用堆叠的down权重做
    npu_grouped_matmul -> npu_moe_finalize_routing（乘权重并恢复token顺序）。
原因
    Python循环对每个专家都要启动三个GEMM和若干索引内核，并在torch.where处同步；64到256个专家
    时每层有数百次小内核启动。分组矩阵乘在一个内核中对连续的token分组完成所有专家的计算。
    这是TP和单设备部署在预填充和解码中的MoE链。
示例
    mask = F.one_hot(ids, num_classes=E).permute(2, 1, 0)
    for e in range(E):
        slot, tok = torch.where(mask[e])
        out.index_add_(0, tok, self.experts[e](x[tok]) * weights[tok, slot, None])
替代写法
    rows, idx_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        x, ids.to(torch.int32), active_num=T * K, expert_num=E, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, E])
    h = torch_npu.npu_grouped_matmul([rows], [w_gate_up], group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    h = torch_npu.npu_grouped_matmul([torch_npu.npu_swiglu(h, dim=-1)], [w_down], group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    out = torch_npu.npu_moe_finalize_routing(h, shared, None, None, weights, idx_map,
                                             ids.to(torch.int32), drop_pad_mode=2)
修复安全性
    需要前置改造。专家权重须在加载时堆叠为[E, H, 2I]（gate在前、up在后，转置为(K, N)）和
    [E, I, H]，去掉逐专家的ModuleList。group_list_type=1须与expert_tokens_num_type=1（计数而非
    累加和）配对，drop_pad_mode=2须与row_idx_type=0的按token排列的索引映射配对。仅适用于不带
    clamp的SwiGLU专家（带clamp的GPT-OSS专家的激活留在torch中）。本规则适用于任意TP规模；专家
    并行（ep > 1）时，预填充链在路由算子与分组矩阵乘之间加入all_to_all和npu_moe_re_routing
    （moe.experts_double_routing），解码则优先使用moe.experts_distribute的MC2链。加到路由结果上的共享专家
    输出（routed + self.shared_experts(x)，带门控与否）作为finalize的skip1传入，由其相加；没有共享专家的
    模型匹配时跳过这一步，传入None。
参考
    catalog/moe/npu_moe_init_routing_v2.toml、npu_grouped_matmul.toml、
    npu_moe_finalize_routing.toml、catalog/ffn/npu_swiglu.toml；reference_chains.md
    （framework_moe_parallel：TP模式与参数速查表）。
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


def lookalike_dense_all_experts(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights,
                                num_experts, shared, dense_weights=None):
    # every expert on every token, mixed by a dense [T, E] weight matrix
    gate = torch.einsum("th,eih->tei", tokens, gate_weights)
    up = torch.einsum("th,eih->tei", tokens, up_weights)
    out = torch.einsum("tei,ehi->teh", F.silu(gate) * up, down_weights)
    return (out * dense_weights.unsqueeze(-1)).sum(dim=1) + shared


def replace(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights, num_experts, shared):
    rows, k = expert_ids.shape
    ids = expert_ids.to(torch.int32)
    sorted_rows, row_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        tokens, ids, active_num=rows * k, expert_num=num_experts, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, num_experts])
    gate_up = torch.cat([gate_weights, up_weights], dim=1).transpose(1, 2)
    hidden = torch_npu.npu_grouped_matmul([sorted_rows], [gate_up], group_list=counts, group_type=0,
                                          group_list_type=1, split_item=2)[0]
    hidden = torch_npu.npu_swiglu(hidden, dim=-1)
    out = torch_npu.npu_grouped_matmul([hidden], [down_weights.transpose(1, 2)], group_list=counts,
                                       group_type=0, group_list_type=1, split_item=2)[0]
    return torch_npu.npu_moe_finalize_routing(out, shared, None, None, routing_weights.to(out.dtype), row_map, ids,
                                              drop_pad_mode=2)


def naive_cumsum_group_list(tokens, routing_weights, expert_ids, gate_weights, up_weights, down_weights,
                            num_experts, shared):
    # Counts from the routing op read as a cumulative sum (group_list_type=0): wrong groups.
    rows, k = expert_ids.shape
    ids = expert_ids.to(torch.int32)
    sorted_rows, row_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        tokens, ids, active_num=rows * k, expert_num=num_experts, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, num_experts])
    gate_up = torch.cat([gate_weights, up_weights], dim=1).transpose(1, 2)
    hidden = torch_npu.npu_grouped_matmul([sorted_rows], [gate_up], group_list=counts, group_type=0,
                                          group_list_type=0, split_item=2)[0]
    hidden = torch_npu.npu_swiglu(hidden, dim=-1)
    out = torch_npu.npu_grouped_matmul([hidden], [down_weights.transpose(1, 2)], group_list=counts,
                                       group_type=0, group_list_type=0, split_item=2)[0]
    return torch_npu.npu_moe_finalize_routing(out, shared, None, None, routing_weights.to(out.dtype), row_map, ids,
                                              drop_pad_mode=2)
