"""Per-expert loop over stacked `gate_up_proj` / `down_proj` parameters becomes routing + grouped matmul + SwiGLU + finalize.

What it does
    Finds the expert loop of current transformers MoE code, where the experts are two 3-D
    parameters rather than a list of modules: `gate_up_proj [E, 2I, H]` applied with
    `F.linear` and split by `.chunk(2, dim=-1)` (gate half first), `down_proj [E, H, I]`,
    tokens picked per expert with `torch.where` on a `one_hot` of the chosen ids (often
    with one extra class for ids that belong to no local expert, which the loop skips),
    weighted and put back with `index_add_`. It proposes the single-device chain:
    `npu_moe_init_routing_v2` -> `npu_grouped_matmul` over the stacked gate_up weights ->
    `npu_swiglu` -> `npu_grouped_matmul` over the down weights -> `npu_moe_finalize_routing`.
Why
    The loop launches two GEMMs, the activation and several index kernels per expert and
    synchronises on `torch.where` and `nonzero`; with 64 to 512 experts that is hundreds
    of small launches per layer in both stages. The grouped matmul runs every expert in
    one kernel over the tokens sorted by expert.
Example
    hit = (F.one_hot(ids, num_classes=E + 1).permute(2, 1, 0).sum((-1, -2)) > 0).nonzero()
    for e in hit:
        e = e[0]
        if e == E:
            continue
        slot, tok = torch.where(mask[e])
        gate, up = F.linear(x[tok], self.gate_up_proj[e]).chunk(2, dim=-1)
        y = F.linear(self.act_fn(gate) * up, self.down_proj[e]) * w[tok, slot, None]
        out.index_add_(0, tok, y.to(out.dtype))
Use instead
    rows, idx_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        x, ids.to(torch.int32), active_num=T * K, expert_num=E, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, E])
    h = torch_npu.npu_grouped_matmul([rows], [w_gate_up_kn], group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    h = torch_npu.npu_grouped_matmul([torch_npu.npu_swiglu(h, dim=-1)], [w_down_kn], group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    out = torch_npu.npu_moe_finalize_routing(h, shared, None, None, w, idx_map,
                                             ids.to(torch.int32), drop_pad_mode=2)
Fix safety
    Needs prerequisites. The grouped matmul takes weights as [E, K, N]: `gate_up_proj`
    becomes `[E, H, 2I]` and `down_proj` `[E, I, H]`, transposed once after loading (the
    gate half stays first, which is what `npu_swiglu` activates). Ids outside
    `[0, E)` (the extra one-hot class) are dropped by `active_expert_range`, as the loop
    skips them. Only for SiLU-gated experts without a clamp or bias: a clamped or biased
    expert (GPT-OSS) keeps its activation in torch. With expert parallelism the chain
    adds the token exchange (moe.experts_double_routing, moe.experts_distribute).
    `group_list_type=1` pairs with `expert_tokens_num_type=1` (counts per expert).
References
    catalog/moe/npu_moe_init_routing_v2.toml, npu_grouped_matmul.toml,
    npu_moe_finalize_routing.toml, catalog/ffn/npu_swiglu.toml; moe.experts_grouped_matmul
    (the same chain for separate gate and up weights); reference_chains.md
    (framework_moe_parallel: TP mode).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "moe.experts_grouped_matmul_gate_up",
    "title": "expert loop over stacked gate_up/down parameters -> init_routing_v2 + grouped_matmul + swiglu + finalize_routing",
    "module": "moe_experts",
    "apis": ["npu_moe_init_routing_v2", "npu_grouped_matmul", "npu_swiglu", "npu_moe_finalize_routing"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "transpose_stacked_weights",
         "en": "After loading, keep the stacked weights as [E, K, N] for the grouped matmul: gate_up_proj [E, 2I, H] -> [E, H, 2I] (gate half first) and down_proj [E, H, I] -> [E, I, H], contiguous.",
         "zh": "加载后把堆叠权重整理为分组矩阵乘所需的[E, K, N]：gate_up_proj [E, 2I, H] -> [E, H, 2I]（gate半在前），down_proj [E, H, I] -> [E, I, H]，并保证连续。",
         "mechanical": False},
        {"id": "int32_expert_ids",
         "en": "Pass the router's expert ids as int32 (the top-k gives int64).",
         "zh": "把路由输出的专家编号转为int32（topk输出为int64）。",
         "mechanical": True},
    ],
    "checks": ["npu_moe_init_routing_v2:*", "npu_grouped_matmul:*", "npu_swiglu:*", "npu_moe_finalize_routing:*"],
    "facts": {"moe_site": "experts", "activation": "silu", "glu_clamped": False, "ffn_gated": True, "glu_order": "gate_first",
              "expert_tokens_num_type": 1, "group_list_type": 1},
    "hints": {"class_names": ["MixtralExperts", "Qwen3MoeExperts", "Qwen2MoeExperts", "DeepseekV3NaiveMoe"]},
    "inputs": {
        "tokens": {"shape": ["T", "H"], "dtype": "act"},
        "routing_weights": {"shape": ["T", "K"], "dtype": "act", "init": "uniform", "low": 0.1, "high": 1.0},
        "expert_ids": {"shape": ["T", "K"], "dtype": "int64", "init": "unique_per_row", "high": "E"},
        "gate_up_weights": {"shape": ["E", "2 * I", "H"], "dtype": "act", "scale": 0.1},
        "down_weights": {"shape": ["E", "H", "I"], "dtype": "act", "scale": 0.1},
        "num_experts": {"dtype": "param", "expr": "E"},
        "shared": {"shape": ["T", "H"], "dtype": "act", "scale": 0.1},
    },
    "sizes": {"T": 10, "K": 2, "E": 24, "H": 32, "I": 48},
    "dtypes": ["float32", "bfloat16"],
    "near_misses": [
        {"file": "fixtures/experts_grouped_matmul_gate_up_nomatch_gelu_experts.py",
         "reason": "the experts activate the gate half with GELU: npu_swiglu applies SiLU"},
    ],
    "match": {
        "optional_inputs": ["shared"],
        "not_from": {"shared": ["add"]},
        "explain": [
            {"when": "expected silu(...), found gelu", "near_miss": "fixtures/experts_grouped_matmul_gate_up_nomatch_gelu_experts.py"},
        ],
    },
    "doc_zh": """对堆叠的gate_up_proj / down_proj参数逐专家循环，替换为路由+分组矩阵乘+SwiGLU+还原。

功能
    识别当前transformers MoE代码中的专家循环：专家不是模块列表，而是两个3维参数：
    gate_up_proj [E, 2I, H]经F.linear计算后用.chunk(2, dim=-1)拆分（gate半在前），
    down_proj [E, H, I]；逐专家用torch.where在所选编号的one_hot上取出token（常多出一个类别，
    表示不属于本地任何专家的编号，循环会跳过它），乘以路由权重后用index_add_累加回去。建议改为
    单设备链：npu_moe_init_routing_v2 -> 对堆叠gate_up权重做npu_grouped_matmul -> npu_swiglu ->
    对down权重做npu_grouped_matmul -> npu_moe_finalize_routing。
原因
    循环对每个专家都要启动两个GEMM、激活和若干索引内核，并在torch.where和nonzero处同步；64到512个
    专家时，两个阶段每层都有数百次小内核启动。分组矩阵乘在一个内核中对按专家排序的token完成全部专家计算。
示例
    hit = (F.one_hot(ids, num_classes=E + 1).permute(2, 1, 0).sum((-1, -2)) > 0).nonzero()
    for e in hit:
        e = e[0]
        if e == E:
            continue
        slot, tok = torch.where(mask[e])
        gate, up = F.linear(x[tok], self.gate_up_proj[e]).chunk(2, dim=-1)
        y = F.linear(self.act_fn(gate) * up, self.down_proj[e]) * w[tok, slot, None]
        out.index_add_(0, tok, y.to(out.dtype))
替代写法
    rows, idx_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        x, ids.to(torch.int32), active_num=T * K, expert_num=E, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, E])
    h = torch_npu.npu_grouped_matmul([rows], [w_gate_up_kn], group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    h = torch_npu.npu_grouped_matmul([torch_npu.npu_swiglu(h, dim=-1)], [w_down_kn], group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    out = torch_npu.npu_moe_finalize_routing(h, shared, None, None, w, idx_map,
                                             ids.to(torch.int32), drop_pad_mode=2)
修复安全性
    需要前置改造。分组矩阵乘的权重为[E, K, N]：gate_up_proj变为[E, H, 2I]，down_proj变为[E, I, H]，
    加载后转置一次（gate半仍在前，正是npu_swiglu激活的一半）。[0, E)之外的编号（one_hot多出的类别）
    由active_expert_range丢弃，与循环跳过它们一致。仅适用于不带clamp和bias的SiLU门控专家：带clamp或
    bias的专家（GPT-OSS）的激活留在torch中。专家并行时链中还要加入token交换
    （moe.experts_double_routing、moe.experts_distribute）。group_list_type=1须与
    expert_tokens_num_type=1（每个专家的计数）配对。
参考
    catalog/moe/npu_moe_init_routing_v2.toml、npu_grouped_matmul.toml、
    npu_moe_finalize_routing.toml、catalog/ffn/npu_swiglu.toml；moe.experts_grouped_matmul
    （gate与up权重分开时的同一条链）；reference_chains.md（framework_moe_parallel：TP模式）。
""",
}


def search(tokens, routing_weights, expert_ids, gate_up_weights, down_weights, num_experts, shared):
    combined = torch.zeros_like(tokens)
    expert_mask = F.one_hot(expert_ids, num_classes=num_experts + 1).permute(2, 1, 0)
    for e in range(num_experts):
        slot, token_idx = torch.where(expert_mask[e])
        picked = tokens[token_idx]
        gate, up = F.linear(picked, gate_up_weights[e]).chunk(2, dim=-1)
        out = F.linear(F.silu(gate) * up, down_weights[e]) * routing_weights[token_idx, slot, None]
        combined.index_add_(0, token_idx, out.to(combined.dtype))
    return combined + shared


def search_exact_classes(tokens, routing_weights, expert_ids, gate_up_weights, down_weights, num_experts, shared):
    # One one-hot class per expert, no sentinel class.
    combined = torch.zeros_like(tokens)
    expert_mask = F.one_hot(expert_ids, num_classes=num_experts).permute(2, 1, 0)
    for e in range(num_experts):
        slot, token_idx = torch.where(expert_mask[e])
        picked = tokens[token_idx]
        gate, up = F.linear(picked, gate_up_weights[e]).chunk(2, dim=-1)
        out = F.linear(F.silu(gate) * up, down_weights[e]) * routing_weights[token_idx, slot, None]
        combined.index_add_(0, token_idx, out.to(combined.dtype))
    return combined + shared


def replace(tokens, routing_weights, expert_ids, gate_up_weights, down_weights, num_experts, shared):
    rows, k = expert_ids.shape
    ids = expert_ids.to(torch.int32)
    sorted_rows, row_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        tokens, ids, active_num=rows * k, expert_num=num_experts, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, num_experts])
    hidden = torch_npu.npu_grouped_matmul([sorted_rows], [gate_up_weights.transpose(1, 2)], group_list=counts,
                                          group_type=0, group_list_type=1, split_item=2)[0]
    hidden = torch_npu.npu_swiglu(hidden, dim=-1)
    out = torch_npu.npu_grouped_matmul([hidden], [down_weights.transpose(1, 2)], group_list=counts,
                                       group_type=0, group_list_type=1, split_item=2)[0]
    return torch_npu.npu_moe_finalize_routing(out, shared, None, None, routing_weights.to(out.dtype), row_map, ids,
                                              drop_pad_mode=2)


def naive_up_half_activated(tokens, routing_weights, expert_ids, gate_up_weights, down_weights, num_experts, shared):
    # The halves swapped (SiLU on the up half): the stacked layout read the wrong way round.
    rows, k = expert_ids.shape
    ids = expert_ids.to(torch.int32)
    sorted_rows, row_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        tokens, ids, active_num=rows * k, expert_num=num_experts, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, num_experts])
    swapped = torch.cat(gate_up_weights.chunk(2, dim=1)[::-1], dim=1)
    hidden = torch_npu.npu_grouped_matmul([sorted_rows], [swapped.transpose(1, 2)], group_list=counts,
                                          group_type=0, group_list_type=1, split_item=2)[0]
    hidden = torch_npu.npu_swiglu(hidden, dim=-1)
    out = torch_npu.npu_grouped_matmul([hidden], [down_weights.transpose(1, 2)], group_list=counts,
                                       group_type=0, group_list_type=1, split_item=2)[0]
    return torch_npu.npu_moe_finalize_routing(out, shared, None, None, routing_weights.to(out.dtype), row_map, ids,
                                              drop_pad_mode=2)
