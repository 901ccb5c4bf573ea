"""Per-expert loop with a clamped SwiGLU (alpha, limit, up + 1) on the halves of stacked `gate_up_proj` becomes routing + grouped matmul + `npu_clipped_swiglu` + finalize.

What it does
    Finds the expert loop over two stacked 3-D parameters, `gate_up_proj [E, 2I, H]`
    applied with `F.linear` and cut into its front (gate) and back (up) halves with
    `.chunk(2, dim=-1)`, `down_proj [E, H, I]`, whose activation is the GPT-OSS one on
    halves instead of even/odd columns: `gate.clamp(max=limit)`,
    `up.clamp(-limit, limit)`, `(up + 1) * gate * sigmoid(gate * alpha)` (MiniMax-M3).
    Tokens are picked per expert with `torch.where` on a `one_hot` of the chosen ids,
    weighted and put back with `index_add_`. It proposes `npu_moe_init_routing_v2` ->
    `npu_grouped_matmul` -> `npu_clipped_swiglu(interleaved=False)` ->
    `npu_grouped_matmul` -> `npu_moe_finalize_routing`.
Why
    The loop launches two GEMMs, five element-wise kernels of the activation and several
    index kernels per expert and synchronises on `torch.where` and `nonzero`; the grouped
    matmul runs every expert in one kernel over the tokens sorted by expert, and
    `npu_clipped_swiglu` is the clamped activation as one kernel.
Example
    for e in hit:
        slot, tok = torch.where(mask[e])
        gate, up = F.linear(x[tok], self.gate_up_proj[e]).chunk(2, dim=-1)
        gate = gate.clamp(max=self.limit)
        up = up.clamp(min=-self.limit, max=self.limit)
        h = (up + 1.0) * (gate * torch.sigmoid(gate * self.alpha))
        out.index_add_(0, tok, (F.linear(h, self.down_proj[e]) * w[tok, slot, None]).to(out.dtype))
Use instead
    rows, idx_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        x, ids.to(torch.int32), active_num=T * K, expert_num=E, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, E])
    h = torch_npu.npu_grouped_matmul([rows], [w_gate_up_kn], group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    h = torch_npu.npu_clipped_swiglu(h, alpha=self.alpha, limit=self.limit, bias=1.0, interleaved=False)
    h = torch_npu.npu_grouped_matmul([h], [w_down_kn], group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    out = torch_npu.npu_moe_finalize_routing(h, None, None, None, w, idx_map,
                                             ids.to(torch.int32), drop_pad_mode=2)
Fix safety
    Needs prerequisites. The grouped matmul takes weights as [E, K, N]: `gate_up_proj`
    becomes `[E, H, 2I]` and `down_proj` `[E, I, H]`, transposed once after loading (the
    gate half stays first). `interleaved=False` is what makes the operator take the
    front half as the clamped, sigmoid-gated part and the back half as the linear part,
    as `.chunk(2, dim=-1)` does; the default `interleaved=True` (GPT-OSS's even/odd
    columns) would pair other columns. `alpha` and `limit` are passed as the model holds
    them, `bias=1.0` is the `up + 1`. A plain `silu(gate) * up` or a clamped SiLU without
    `alpha` and `+ 1` is another activation and is not matched. Ids outside `[0, E)`
    (the extra one-hot class the loop skips) are dropped by `active_expert_range`.
References
    catalog/moe/npu_moe_init_routing_v2.toml, npu_grouped_matmul.toml,
    npu_moe_finalize_routing.toml, catalog/ffn/npu_clipped_swiglu.toml;
    moe.experts_grouped_matmul_gate_up (the same chain with a plain SwiGLU);
    ffn.swiglu_clamped_reject (the GPT-OSS activation alone).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "moe.experts_grouped_matmul_clipped_swiglu",
    "title": "expert loop over stacked gate_up/down with a clamped SwiGLU on halves -> init_routing_v2 + grouped_matmul + clipped_swiglu + finalize_routing",
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
    "hints": {"class_names": ["MiniMaxM3VLTextExperts", "MiniMaxM3Experts"]},
    "inputs": {
        "tokens": {"shape": ["T", "H"], "dtype": "act"},
        "routing_weights": {"shape": ["T", "K"], "dtype": "act", "init": "uniform", "low": 0.1, "high": 1.0},
        "expert_ids": {"shape": ["T", "K"], "dtype": "int64", "init": "unique_per_row", "high": "E"},
        "gate_up_weights": {"shape": ["E", "2 * I", "H"], "dtype": "act", "scale": 0.5},
        "down_weights": {"shape": ["E", "H", "I"], "dtype": "act", "scale": 0.1},
        "num_experts": {"dtype": "param", "expr": "E"},
        "alpha": {"dtype": "param", "value": 1.702},
        "limit": {"dtype": "param", "value": 1.5},
    },
    "sizes": {"T": 10, "K": 2, "E": 24, "H": 32, "I": 48},
    "dtypes": ["float32", "bfloat16"],
    "near_misses": [
        {"file": "fixtures/experts_grouped_matmul_clipped_swiglu_nomatch_no_offset.py",
         "reason": "the clamped gate multiplies the clamped up half without the + 1: npu_clipped_swiglu would need bias=0.0, which this rule does not propose"},
    ],
    "match": {
        "lookalikes": {"lookalike_clamped_silu": "fixtures/experts_grouped_matmul_clipped_swiglu_nomatch_no_offset.py"},
    },
    "doc_zh": """对堆叠gate_up_proj按前后两半做截断SwiGLU（alpha、limit、up + 1）的逐专家循环，替换为路由+分组矩阵乘+npu_clipped_swiglu+还原。

功能
    识别对两个堆叠3维参数的专家循环：gate_up_proj [E, 2I, H]经F.linear计算后用
    .chunk(2, dim=-1)拆成前半（gate）与后半（up），down_proj [E, H, I]；其激活是按两半而非奇偶列
    计算的GPT-OSS激活：gate.clamp(max=limit)、up.clamp(-limit, limit)、
    (up + 1) * gate * sigmoid(gate * alpha)（MiniMax-M3）。逐专家用torch.where在所选编号的
    one_hot上取出token，乘以路由权重后用index_add_累加回去。建议改为npu_moe_init_routing_v2 ->
    npu_grouped_matmul -> npu_clipped_swiglu(interleaved=False) -> npu_grouped_matmul ->
    npu_moe_finalize_routing。
原因
    循环对每个专家都要启动两个GEMM、激活的五个逐元素内核和若干索引内核，并在torch.where与nonzero
    处同步；分组矩阵乘在一个内核中对按专家排序的token完成全部专家计算，npu_clipped_swiglu把截断激活
    合为一个内核。
示例
    for e in hit:
        slot, tok = torch.where(mask[e])
        gate, up = F.linear(x[tok], self.gate_up_proj[e]).chunk(2, dim=-1)
        gate = gate.clamp(max=self.limit)
        up = up.clamp(min=-self.limit, max=self.limit)
        h = (up + 1.0) * (gate * torch.sigmoid(gate * self.alpha))
        out.index_add_(0, tok, (F.linear(h, self.down_proj[e]) * w[tok, slot, None]).to(out.dtype))
替代写法
    rows, idx_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        x, ids.to(torch.int32), active_num=T * K, expert_num=E, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, E])
    h = torch_npu.npu_grouped_matmul([rows], [w_gate_up_kn], group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    h = torch_npu.npu_clipped_swiglu(h, alpha=self.alpha, limit=self.limit, bias=1.0, interleaved=False)
    h = torch_npu.npu_grouped_matmul([h], [w_down_kn], group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    out = torch_npu.npu_moe_finalize_routing(h, None, None, None, w, idx_map,
                                             ids.to(torch.int32), drop_pad_mode=2)
修复安全性
    需要前置改造。分组矩阵乘的权重为[E, K, N]：gate_up_proj变为[E, H, 2I]，down_proj变为
    [E, I, H]，加载后转置一次（gate半仍在前）。interleaved=False使算子把前一半当作截断并经sigmoid
    门控的部分、后一半当作线性部分，与.chunk(2, dim=-1)一致；默认的interleaved=True（GPT-OSS的
    奇偶列）会配对其他列。alpha与limit按模型持有的值传入，bias=1.0即up + 1。普通的
    silu(gate) * up，或没有alpha与+ 1的截断SiLU，是另一种激活，不匹配。[0, E)之外的编号（循环
    跳过的one_hot多出类别）由active_expert_range丢弃。
参考
    catalog/moe/npu_moe_init_routing_v2.toml、npu_grouped_matmul.toml、
    npu_moe_finalize_routing.toml、catalog/ffn/npu_clipped_swiglu.toml；
    moe.experts_grouped_matmul_gate_up（普通SwiGLU的同一条链）；ffn.swiglu_clamped_reject
    （单独的GPT-OSS激活）。
""",
}


def search(tokens, routing_weights, expert_ids, gate_up_weights, down_weights, num_experts, alpha, limit):
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


def search_exact_classes(tokens, routing_weights, expert_ids, gate_up_weights, down_weights, num_experts, alpha, limit):
    # One one-hot class per expert, torch.clamp spelled as a function.
    combined = torch.zeros_like(tokens)
    expert_mask = F.one_hot(expert_ids, num_classes=num_experts).permute(2, 1, 0)
    for e in range(num_experts):
        slot, token_idx = torch.where(expert_mask[e])
        gate, up = F.linear(tokens[token_idx], gate_up_weights[e]).chunk(2, dim=-1)
        gate = torch.clamp(gate, max=limit)
        up = torch.clamp(up, -limit, limit)
        out = F.linear(gate * torch.sigmoid(alpha * gate) * (up + 1), down_weights[e])
        out = out * routing_weights[token_idx, slot, None]
        combined.index_add_(0, token_idx, out.to(combined.dtype))
    return combined


def lookalike_clamped_silu(tokens, routing_weights, expert_ids, gate_up_weights, down_weights, num_experts, alpha, limit):
    # both halves clamped, then a plain SiLU gate: no alpha, no + 1 on the up half
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


def replace(tokens, routing_weights, expert_ids, gate_up_weights, down_weights, num_experts, alpha, limit):
    rows, k = expert_ids.shape
    ids = expert_ids.to(torch.int32)
    sorted_rows, row_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        tokens, ids, active_num=rows * k, expert_num=num_experts, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, num_experts])
    hidden = torch_npu.npu_grouped_matmul([sorted_rows], [gate_up_weights.transpose(1, 2)], group_list=counts,
                                          group_type=0, group_list_type=1, split_item=2)[0]
    hidden = torch_npu.npu_clipped_swiglu(hidden, alpha=alpha, limit=limit, bias=1.0, interleaved=False)
    out = torch_npu.npu_grouped_matmul([hidden], [down_weights.transpose(1, 2)], group_list=counts,
                                       group_type=0, group_list_type=1, split_item=2)[0]
    return torch_npu.npu_moe_finalize_routing(out, None, None, None, routing_weights.to(out.dtype), row_map, ids,
                                              drop_pad_mode=2)


def naive_interleaved(tokens, routing_weights, expert_ids, gate_up_weights, down_weights, num_experts, alpha, limit):
    # The operator's default even/odd split: the halves of chunk(2) are not its pairs.
    rows, k = expert_ids.shape
    ids = expert_ids.to(torch.int32)
    sorted_rows, row_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        tokens, ids, active_num=rows * k, expert_num=num_experts, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, num_experts])
    hidden = torch_npu.npu_grouped_matmul([sorted_rows], [gate_up_weights.transpose(1, 2)], group_list=counts,
                                          group_type=0, group_list_type=1, split_item=2)[0]
    hidden = torch_npu.npu_clipped_swiglu(hidden, alpha=alpha, limit=limit, bias=1.0, interleaved=True)
    out = torch_npu.npu_grouped_matmul([hidden], [down_weights.transpose(1, 2)], group_list=counts,
                                       group_type=0, group_list_type=1, split_item=2)[0]
    return torch_npu.npu_moe_finalize_routing(out, None, None, None, routing_weights.to(out.dtype), row_map, ids,
                                              drop_pad_mode=2)


def naive_plain_swiglu(tokens, routing_weights, expert_ids, gate_up_weights, down_weights, num_experts, alpha, limit):
    # npu_swiglu: no clamp, no alpha, no + 1.
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
