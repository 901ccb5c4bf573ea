"""Per-expert loop over stacked `[E, in, out]` parameters applied with `@` becomes routing + grouped matmul + SwiGLU + finalize.

What it does
    Finds the expert loop whose stacked weights are stored the way a grouped matmul reads
    them, `gate_up_proj [E, H, 2I]` and `down_proj [E, I, H]`, applied as
    `tokens @ gate_up_proj[e]` (Aria, checkpoints marked `is_transposed`), the product cut
    into its gate (front) and up (back) halves with `.chunk(2, dim=-1)`, activated with
    `silu(gate) * up`, tokens picked per expert with `torch.where` on a `one_hot` of the
    chosen ids, weighted and put back with `index_add_`. It proposes
    `npu_moe_init_routing_v2` -> `npu_grouped_matmul` over the stacked gate_up weights
    as they are -> `npu_swiglu` -> `npu_grouped_matmul` over the down weights ->
    `npu_moe_finalize_routing`.
Why
    The loop launches two GEMMs, the activation and several index kernels per expert and
    synchronises on `torch.where` and `nonzero`; the grouped matmul runs every expert in
    one kernel over the tokens sorted by expert, in prefill and in decode.
Example
    for e in hit:
        slot, tok = torch.where(mask[e])
        gate, up = (x[tok] @ self.gate_up_proj[e]).chunk(2, dim=-1)
        h = (self.act_fn(gate) * up) @ self.down_proj[e]
        out.index_add_(0, tok, (h * w[tok, slot, None]).to(out.dtype))
Use instead
    rows, idx_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        x, ids.to(torch.int32), active_num=T * K, expert_num=E, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, E])
    h = torch_npu.npu_grouped_matmul([rows], [self.gate_up_proj], group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    h = torch_npu.npu_grouped_matmul([torch_npu.npu_swiglu(h, dim=-1)], [self.down_proj], group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    out = torch_npu.npu_moe_finalize_routing(h, None, None, None, w, idx_map,
                                             ids.to(torch.int32), drop_pad_mode=2)
Fix safety
    Safe apart from the int32 ids (mechanical). The weights are already [E, K, N], the
    layout the grouped matmul takes, so nothing is transposed; the gate half is the front
    one, the half `npu_swiglu` activates. Only for SiLU-gated experts without a clamp or
    bias (a clamped or biased expert keeps its activation elsewhere). Ids outside
    `[0, E)` (the extra one-hot class the loop skips) are dropped by
    `active_expert_range`. `group_list_type=1` pairs with `expert_tokens_num_type=1`.
References
    catalog/moe/npu_moe_init_routing_v2.toml, npu_grouped_matmul.toml,
    npu_moe_finalize_routing.toml, catalog/ffn/npu_swiglu.toml;
    moe.experts_grouped_matmul_gate_up (the same chain over [E, out, in] weights applied
    with F.linear).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "moe.experts_grouped_matmul_gate_up_kn",
    "title": "expert loop over stacked [E, in, out] gate_up/down applied with @ -> init_routing_v2 + grouped_matmul + swiglu + finalize_routing",
    "module": "moe_experts",
    "apis": ["npu_moe_init_routing_v2", "npu_grouped_matmul", "npu_swiglu", "npu_moe_finalize_routing"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "int32_expert_ids",
         "en": "Pass the router's expert ids as int32 (the top-k gives int64).",
         "zh": "把路由输出的专家编号转为int32（topk输出为int64）。",
         "mechanical": True},
    ],
    "checks": ["npu_moe_init_routing_v2:*", "npu_grouped_matmul:*", "npu_swiglu:*", "npu_moe_finalize_routing:*"],
    "facts": {"moe_site": "experts", "activation": "silu", "glu_clamped": False, "ffn_gated": True, "glu_order": "gate_first",
              "expert_tokens_num_type": 1, "group_list_type": 1},
    "hints": {"class_names": ["AriaExperts"]},
    "inputs": {
        "tokens": {"shape": ["T", "H"], "dtype": "act"},
        "routing_weights": {"shape": ["T", "K"], "dtype": "act", "init": "uniform", "low": 0.1, "high": 1.0},
        "expert_ids": {"shape": ["T", "K"], "dtype": "int64", "init": "unique_per_row", "high": "E"},
        "gate_up_weights": {"shape": ["E", "H", "2 * I"], "dtype": "act", "scale": 0.1},
        "down_weights": {"shape": ["E", "I", "H"], "dtype": "act", "scale": 0.1},
        "num_experts": {"dtype": "param", "expr": "E"},
    },
    "sizes": {"T": 10, "K": 2, "E": 24, "H": 32, "I": 48},
    "dtypes": ["float32", "bfloat16"],
    "near_misses": [
        {"file": "fixtures/experts_grouped_matmul_gate_up_kn_nomatch_gelu_experts.py",
         "reason": "the experts activate the gate half with GELU: npu_swiglu applies SiLU"},
    ],
    "match": {
        "lookalikes": {"lookalike_gelu": "fixtures/experts_grouped_matmul_gate_up_kn_nomatch_gelu_experts.py"},
    },
    "doc_zh": """对堆叠的[E, in, out]参数用@逐专家循环，替换为路由+分组矩阵乘+SwiGLU+还原。

功能
    识别这样的专家循环：堆叠权重按分组矩阵乘读取的方式存放，gate_up_proj [E, H, 2I]、
    down_proj [E, I, H]，以tokens @ gate_up_proj[e]计算（Aria，以及标记is_transposed的权重），
    乘积用.chunk(2, dim=-1)拆成gate（前半）与up（后半），以silu(gate) * up激活；逐专家用
    torch.where在所选编号的one_hot上取出token，乘以路由权重后用index_add_累加回去。建议改为
    npu_moe_init_routing_v2 -> 直接对堆叠gate_up权重做npu_grouped_matmul -> npu_swiglu ->
    对down权重做npu_grouped_matmul -> npu_moe_finalize_routing。
原因
    循环对每个专家都要启动两个GEMM、激活和若干索引内核，并在torch.where与nonzero处同步；分组矩阵乘
    在一个内核中对按专家排序的token完成全部专家计算，预填充和解码都受益。
示例
    for e in hit:
        slot, tok = torch.where(mask[e])
        gate, up = (x[tok] @ self.gate_up_proj[e]).chunk(2, dim=-1)
        h = (self.act_fn(gate) * up) @ self.down_proj[e]
        out.index_add_(0, tok, (h * w[tok, slot, None]).to(out.dtype))
替代写法
    rows, idx_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        x, ids.to(torch.int32), active_num=T * K, expert_num=E, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, E])
    h = torch_npu.npu_grouped_matmul([rows], [self.gate_up_proj], group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    h = torch_npu.npu_grouped_matmul([torch_npu.npu_swiglu(h, dim=-1)], [self.down_proj], group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    out = torch_npu.npu_moe_finalize_routing(h, None, None, None, w, idx_map,
                                             ids.to(torch.int32), drop_pad_mode=2)
修复安全性
    除int32编号（机械改写）外安全。权重已是分组矩阵乘所需的[E, K, N]，无需转置；gate半在前，正是
    npu_swiglu激活的一半。仅适用于不带clamp和bias的SiLU门控专家（带clamp或bias的专家其激活另行
    处理）。[0, E)之外的编号（循环跳过的one_hot多出类别）由active_expert_range丢弃。
    group_list_type=1须与expert_tokens_num_type=1配对。
参考
    catalog/moe/npu_moe_init_routing_v2.toml、npu_grouped_matmul.toml、
    npu_moe_finalize_routing.toml、catalog/ffn/npu_swiglu.toml；moe.experts_grouped_matmul_gate_up
    （对[E, out, in]权重用F.linear的同一条链）。
""",
}


def search(tokens, routing_weights, expert_ids, gate_up_weights, down_weights, num_experts):
    combined = torch.zeros_like(tokens)
    expert_mask = F.one_hot(expert_ids, num_classes=num_experts + 1).permute(2, 1, 0)
    for e in range(num_experts):
        slot, token_idx = torch.where(expert_mask[e])
        gate, up = (tokens[token_idx] @ gate_up_weights[e]).chunk(2, dim=-1)
        out = (F.silu(gate) * up) @ down_weights[e]
        out = out * routing_weights[token_idx, slot, None]
        combined.index_add_(0, token_idx, out.to(combined.dtype))
    return combined


def search_matmul(tokens, routing_weights, expert_ids, gate_up_weights, down_weights, num_experts):
    # torch.matmul spelled out, one one-hot class per expert
    combined = torch.zeros_like(tokens)
    expert_mask = F.one_hot(expert_ids, num_classes=num_experts).permute(2, 1, 0)
    for e in range(num_experts):
        slot, token_idx = torch.where(expert_mask[e])
        gate, up = torch.matmul(tokens[token_idx], gate_up_weights[e]).chunk(2, dim=-1)
        out = torch.matmul(F.silu(gate) * up, down_weights[e]) * routing_weights[token_idx, slot, None]
        combined.index_add_(0, token_idx, out.to(combined.dtype))
    return combined


def lookalike_gelu(tokens, routing_weights, expert_ids, gate_up_weights, down_weights, num_experts):
    # GELU on the gate half: not what npu_swiglu computes
    combined = torch.zeros_like(tokens)
    expert_mask = F.one_hot(expert_ids, num_classes=num_experts + 1).permute(2, 1, 0)
    for e in range(num_experts):
        slot, token_idx = torch.where(expert_mask[e])
        gate, up = (tokens[token_idx] @ gate_up_weights[e]).chunk(2, dim=-1)
        out = (F.gelu(gate) * up) @ down_weights[e]
        out = out * routing_weights[token_idx, slot, None]
        combined.index_add_(0, token_idx, out.to(combined.dtype))
    return combined


def replace(tokens, routing_weights, expert_ids, gate_up_weights, down_weights, num_experts):
    rows, k = expert_ids.shape
    ids = expert_ids.to(torch.int32)
    sorted_rows, row_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        tokens, ids, active_num=rows * k, expert_num=num_experts, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, num_experts])
    hidden = torch_npu.npu_grouped_matmul([sorted_rows], [gate_up_weights], group_list=counts,
                                          group_type=0, group_list_type=1, split_item=2)[0]
    hidden = torch_npu.npu_swiglu(hidden, dim=-1)
    out = torch_npu.npu_grouped_matmul([hidden], [down_weights], group_list=counts,
                                       group_type=0, group_list_type=1, split_item=2)[0]
    return torch_npu.npu_moe_finalize_routing(out, None, None, None, routing_weights.to(out.dtype), row_map, ids,
                                              drop_pad_mode=2)


def naive_transposed_weights(tokens, routing_weights, expert_ids, gate_up_weights, down_weights, num_experts):
    # Transposing as the F.linear layout needs: the grouped matmul then refuses or computes other products.
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
    return torch_npu.npu_moe_finalize_routing(out, None, None, None, routing_weights.to(out.dtype), row_map, ids,
                                              drop_pad_mode=2)
