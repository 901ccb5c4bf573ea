"""Per-expert loop with a clamped SiLU gate (`silu(clamp(gate)) * clamp(up)`) on the halves of stacked `gate_up_proj` becomes routing + grouped matmul + `npu_clipped_swiglu` + finalize.

What it does
    Finds the expert loop over two stacked 3-D parameters, `gate_up_proj [E, 2I, H]`
    applied with `F.linear` and cut into its front (gate) and back (up) halves with
    `.chunk(2, dim=-1)`, `down_proj [E, H, I]`, whose activation clamps both halves
    before a plain SwiGLU: `gate.clamp(max=limit)`, `up.clamp(-limit, limit)`,
    `silu(gate) * up` (HunYuan-V4's `swiglu_limit`). Tokens are picked per expert with
    `torch.where` on a `one_hot` of the chosen ids, weighted and put back with
    `index_add_`. It proposes `npu_moe_init_routing_v2` -> `npu_grouped_matmul` ->
    `npu_clipped_swiglu(alpha=1.0, bias=0.0, interleaved=False)` -> `npu_grouped_matmul`
    -> `npu_moe_finalize_routing`.
Why
    The loop launches two GEMMs, the clamps, the activation and several index kernels
    per expert and synchronises on `torch.where` and `nonzero`; the grouped matmul runs
    every expert in one kernel over the tokens sorted by expert. `npu_swiglu` cannot
    take this activation (it has no clamp); `npu_clipped_swiglu` computes
    `A * sigmoid(alpha * A) * (B + bias)` on the clamped halves, which with `alpha=1`
    and `bias=0` is `silu(A) * B`.
Example
    for e in hit:
        slot, tok = torch.where(mask[e])
        gate, up = F.linear(x[tok], self.gate_up_proj[e]).chunk(2, dim=-1)
        gate = gate.clamp(max=self.swiglu_limit)
        up = up.clamp(min=-self.swiglu_limit, max=self.swiglu_limit)
        h = F.linear(F.silu(gate) * up, self.down_proj[e]) * w[tok, slot, None]
        out.index_add_(0, tok, h.to(out.dtype))
Use instead
    rows, idx_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        x, ids.to(torch.int32), active_num=T * K, expert_num=E, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, E])
    h = torch_npu.npu_grouped_matmul([rows], [w_gate_up_kn], group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    h = torch_npu.npu_clipped_swiglu(h, alpha=1.0, limit=self.swiglu_limit, bias=0.0, interleaved=False)
    h = torch_npu.npu_grouped_matmul([h], [w_down_kn], group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    out = torch_npu.npu_moe_finalize_routing(h, None, None, None, w, idx_map,
                                             ids.to(torch.int32), drop_pad_mode=2)
Fix safety
    Needs prerequisites. The grouped matmul takes weights as [E, K, N]: `gate_up_proj`
    becomes `[E, H, 2I]` and `down_proj` `[E, I, H]`, transposed once after loading (the
    gate half stays first). The three activation arguments are not the operator's
    defaults and each matters: `alpha=1.0` (the default 1.702 is GPT-OSS's), `bias=0.0`
    (the default 1.0 adds one to the up half) and `interleaved=False` (the default pairs
    even and odd columns, `.chunk(2, dim=-1)` takes halves). The clamp limit is passed as
    the model holds it. The GPT-OSS form with `alpha` and `up + 1` is
    moe.experts_grouped_matmul_clipped_swiglu. Ids outside `[0, E)` (the extra one-hot
    class the loop skips) are dropped by `active_expert_range`.
References
    catalog/moe/npu_moe_init_routing_v2.toml, npu_grouped_matmul.toml,
    npu_moe_finalize_routing.toml, catalog/ffn/npu_clipped_swiglu.toml;
    moe.experts_grouped_matmul_gate_up (no clamp); moe.experts_grouped_matmul_clipped_swiglu
    (alpha and + 1).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "moe.experts_grouped_matmul_clamped_silu",
    "title": "expert loop over stacked gate_up/down with silu(clamp(gate)) * clamp(up) -> init_routing_v2 + grouped_matmul + clipped_swiglu(alpha=1, bias=0) + finalize_routing",
    "module": "moe_experts",
    "apis": ["npu_moe_init_routing_v2", "npu_grouped_matmul", "npu_clipped_swiglu", "npu_moe_finalize_routing"],
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
    "checks": ["npu_moe_init_routing_v2:*", "npu_grouped_matmul:*", "npu_clipped_swiglu:*", "npu_moe_finalize_routing:*"],
    "facts": {"moe_site": "experts", "activation": "silu", "glu_clamped": True, "ffn_gated": True, "glu_order": "gate_first",
              "expert_tokens_num_type": 1, "group_list_type": 1},
    "hints": {"class_names": ["HYV4Experts"]},
    "inputs": {
        "tokens": {"shape": ["T", "H"], "dtype": "act"},
        "routing_weights": {"shape": ["T", "K"], "dtype": "act", "init": "uniform", "low": 0.1, "high": 1.0},
        "expert_ids": {"shape": ["T", "K"], "dtype": "int64", "init": "unique_per_row", "high": "E"},
        "gate_up_weights": {"shape": ["E", "2 * I", "H"], "dtype": "act", "scale": 0.5},
        "down_weights": {"shape": ["E", "H", "I"], "dtype": "act", "scale": 0.1},
        "num_experts": {"dtype": "param", "expr": "E"},
        "limit": {"dtype": "param", "value": 1.5},
    },
    "sizes": {"T": 10, "K": 2, "E": 24, "H": 32, "I": 48},
    "dtypes": ["float32", "bfloat16"],
    "near_misses": [
        {"file": "fixtures/experts_grouped_matmul_clamped_silu_nomatch_alpha_offset.py",
         "reason": "the gate is sigmoid(alpha * gate) * gate and the up half gets + 1 (the GPT-OSS form): see moe.experts_grouped_matmul_clipped_swiglu"},
    ],
    "match": {
        "lookalikes": {"lookalike_alpha_offset": {
            "near_miss": "fixtures/experts_grouped_matmul_clamped_silu_nomatch_alpha_offset.py",
            "inputs": {"alpha": {"dtype": "param", "value": 1.702}}}},
    },
    "doc_zh": """对堆叠gate_up_proj按前后两半做截断SiLU门控（silu(clamp(gate)) * clamp(up)）的逐专家循环，替换为路由+分组矩阵乘+npu_clipped_swiglu+还原。

功能
    识别对两个堆叠3维参数的专家循环：gate_up_proj [E, 2I, H]经F.linear计算后用
    .chunk(2, dim=-1)拆成前半（gate）与后半（up），down_proj [E, H, I]；其激活先截断两半再做普通
    SwiGLU：gate.clamp(max=limit)、up.clamp(-limit, limit)、silu(gate) * up（HunYuan-V4的
    swiglu_limit）。逐专家用torch.where在所选编号的one_hot上取出token，乘以路由权重后用index_add_
    累加回去。建议改为npu_moe_init_routing_v2 -> npu_grouped_matmul ->
    npu_clipped_swiglu(alpha=1.0, bias=0.0, interleaved=False) -> npu_grouped_matmul ->
    npu_moe_finalize_routing。
原因
    循环对每个专家都要启动两个GEMM、截断、激活和若干索引内核，并在torch.where与nonzero处同步；分组
    矩阵乘在一个内核中对按专家排序的token完成全部专家计算。npu_swiglu无法承接这种激活（没有截断）；
    npu_clipped_swiglu在截断后的两半上计算A * sigmoid(alpha * A) * (B + bias)，alpha=1、bias=0时
    即silu(A) * B。
示例
    for e in hit:
        slot, tok = torch.where(mask[e])
        gate, up = F.linear(x[tok], self.gate_up_proj[e]).chunk(2, dim=-1)
        gate = gate.clamp(max=self.swiglu_limit)
        up = up.clamp(min=-self.swiglu_limit, max=self.swiglu_limit)
        h = F.linear(F.silu(gate) * up, self.down_proj[e]) * w[tok, slot, None]
        out.index_add_(0, tok, h.to(out.dtype))
替代写法
    rows, idx_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        x, ids.to(torch.int32), active_num=T * K, expert_num=E, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, E])
    h = torch_npu.npu_grouped_matmul([rows], [w_gate_up_kn], group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    h = torch_npu.npu_clipped_swiglu(h, alpha=1.0, limit=self.swiglu_limit, bias=0.0, interleaved=False)
    h = torch_npu.npu_grouped_matmul([h], [w_down_kn], group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    out = torch_npu.npu_moe_finalize_routing(h, None, None, None, w, idx_map,
                                             ids.to(torch.int32), drop_pad_mode=2)
修复安全性
    需要前置改造。分组矩阵乘的权重为[E, K, N]：gate_up_proj变为[E, H, 2I]，down_proj变为
    [E, I, H]，加载后转置一次（gate半仍在前）。三个激活参数都不是算子的默认值，且各自都有影响：
    alpha=1.0（默认的1.702属于GPT-OSS），bias=0.0（默认的1.0会给up半加一），interleaved=False
    （默认按奇偶列配对，而.chunk(2, dim=-1)取前后两半）。截断门限按模型持有的值传入。带alpha与
    up + 1的GPT-OSS形式见moe.experts_grouped_matmul_clipped_swiglu。[0, E)之外的编号（循环跳过的
    one_hot多出类别）由active_expert_range丢弃。
参考
    catalog/moe/npu_moe_init_routing_v2.toml、npu_grouped_matmul.toml、
    npu_moe_finalize_routing.toml、catalog/ffn/npu_clipped_swiglu.toml；
    moe.experts_grouped_matmul_gate_up（无截断）；moe.experts_grouped_matmul_clipped_swiglu
    （带alpha与+ 1）。
""",
}


def search(tokens, routing_weights, expert_ids, gate_up_weights, down_weights, num_experts, limit):
    combined = torch.zeros_like(tokens)
    expert_mask = F.one_hot(expert_ids, num_classes=num_experts + 1).permute(2, 1, 0)
    for e in range(num_experts):
        slot, token_idx = torch.where(expert_mask[e])
        gate, up = F.linear(tokens[token_idx], gate_up_weights[e]).chunk(2, dim=-1)
        gate = gate.clamp(max=limit)
        up = up.clamp(min=-limit, max=limit)
        out = F.linear(F.silu(gate) * up, down_weights[e]) * routing_weights[token_idx, slot, None]
        combined.index_add_(0, token_idx, out.to(combined.dtype))
    return combined


def search_exact_classes(tokens, routing_weights, expert_ids, gate_up_weights, down_weights, num_experts, limit):
    # One one-hot class per expert, torch.clamp spelled as a function.
    combined = torch.zeros_like(tokens)
    expert_mask = F.one_hot(expert_ids, num_classes=num_experts).permute(2, 1, 0)
    for e in range(num_experts):
        slot, token_idx = torch.where(expert_mask[e])
        gate, up = F.linear(tokens[token_idx], gate_up_weights[e]).chunk(2, dim=-1)
        gate = torch.clamp(gate, max=limit)
        up = torch.clamp(up, -limit, limit)
        out = F.linear(F.silu(gate) * up, down_weights[e])
        out = out * routing_weights[token_idx, slot, None]
        combined.index_add_(0, token_idx, out.to(combined.dtype))
    return combined


def lookalike_alpha_offset(tokens, routing_weights, expert_ids, gate_up_weights, down_weights, num_experts, limit,
                           alpha=1.702):
    # the GPT-OSS activation on halves: sigmoid(alpha * gate) and + 1 on the up half
    combined = torch.zeros_like(tokens)
    expert_mask = F.one_hot(expert_ids, num_classes=num_experts + 1).permute(2, 1, 0)
    for e in range(num_experts):
        slot, token_idx = torch.where(expert_mask[e])
        gate, up = F.linear(tokens[token_idx], gate_up_weights[e]).chunk(2, dim=-1)
        gate = gate.clamp(max=limit)
        up = up.clamp(min=-limit, max=limit)
        glu = gate * torch.sigmoid(gate * alpha)
        out = F.linear((up + 1.0) * glu, down_weights[e]) * routing_weights[token_idx, slot, None]
        combined.index_add_(0, token_idx, out.to(combined.dtype))
    return combined


def replace(tokens, routing_weights, expert_ids, gate_up_weights, down_weights, num_experts, limit):
    rows, k = expert_ids.shape
    ids = expert_ids.to(torch.int32)
    sorted_rows, row_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        tokens, ids, active_num=rows * k, expert_num=num_experts, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, num_experts])
    hidden = torch_npu.npu_grouped_matmul([sorted_rows], [gate_up_weights.transpose(1, 2)], group_list=counts,
                                          group_type=0, group_list_type=1, split_item=2)[0]
    hidden = torch_npu.npu_clipped_swiglu(hidden, alpha=1.0, limit=limit, bias=0.0, interleaved=False)
    out = torch_npu.npu_grouped_matmul([hidden], [down_weights.transpose(1, 2)], group_list=counts,
                                       group_type=0, group_list_type=1, split_item=2)[0]
    return torch_npu.npu_moe_finalize_routing(out, None, None, None, routing_weights.to(out.dtype), row_map, ids,
                                              drop_pad_mode=2)


def naive_default_arguments(tokens, routing_weights, expert_ids, gate_up_weights, down_weights, num_experts, limit):
    # The operator's defaults (alpha 1.702, bias 1.0, even/odd columns): GPT-OSS, not this activation.
    rows, k = expert_ids.shape
    ids = expert_ids.to(torch.int32)
    sorted_rows, row_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        tokens, ids, active_num=rows * k, expert_num=num_experts, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, num_experts])
    hidden = torch_npu.npu_grouped_matmul([sorted_rows], [gate_up_weights.transpose(1, 2)], group_list=counts,
                                          group_type=0, group_list_type=1, split_item=2)[0]
    hidden = torch_npu.npu_clipped_swiglu(hidden, limit=limit)
    out = torch_npu.npu_grouped_matmul([hidden], [down_weights.transpose(1, 2)], group_list=counts,
                                       group_type=0, group_list_type=1, split_item=2)[0]
    return torch_npu.npu_moe_finalize_routing(out, None, None, None, routing_weights.to(out.dtype), row_map, ids,
                                              drop_pad_mode=2)


def naive_plain_swiglu(tokens, routing_weights, expert_ids, gate_up_weights, down_weights, num_experts, limit):
    # npu_swiglu: the clamps are lost.
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
