"""GPT-OSS expert loop (stacked `[E, in, out]` weights applied with `@`, per-expert biases, clamped SwiGLU on even/odd columns) becomes routing + biased grouped matmul + `npu_clipped_swiglu` + finalize.

What it does
    Finds the expert loop of GPT-OSS: `gate_up_proj [E, H, 2I]` with `gate_up_proj_bias
    [E, 2I]` applied as `x[tok] @ gate_up_proj[e] + gate_up_proj_bias[e]`, the gate and
    up halves taken as the even and odd columns, `gate.clamp(max=limit)`,
    `up.clamp(-limit, limit)`, `(up + 1) * gate * sigmoid(gate * alpha)`, then
    `@ down_proj[e] + down_proj_bias[e]`, weighted by the routing weight and put back
    with `index_add_`. It proposes `npu_moe_init_routing_v2` -> `npu_grouped_matmul` over
    the per-expert gate_up weights with their biases -> `npu_clipped_swiglu` (even/odd
    columns, the default) -> `npu_grouped_matmul` over the down weights with their
    biases -> `npu_moe_finalize_routing`.
Why
    The loop launches per expert two GEMMs, two bias adds, the seven element-wise kernels
    of the clamped activation, the weighting and several index kernels, and synchronises
    on `torch.where` and `nonzero`; with 32 to 128 experts that is hundreds of small
    launches per layer. The grouped matmul adds each expert's bias itself.
Example
    for e in hit:
        pos, tok = torch.where(mask[e])
        gate_up = x[tok] @ self.gate_up_proj[e] + self.gate_up_proj_bias[e]
        gate, up = gate_up[..., ::2].clamp(max=self.limit), gate_up[..., 1::2].clamp(-self.limit, self.limit)
        out = ((up + 1) * gate * torch.sigmoid(gate * self.alpha)) @ self.down_proj[e] + self.down_proj_bias[e]
        y.index_add_(0, tok, (out * w[tok, pos, None]).to(y.dtype))
Use instead
    rows, idx_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        x, ids.to(torch.int32), active_num=T * K, expert_num=E, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, E])
    h = torch_npu.npu_grouped_matmul([rows], list(self.gate_up_proj.unbind(0)),
                                     bias=list(self.gate_up_proj_bias.float().unbind(0)), group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    h = torch_npu.npu_clipped_swiglu(h, alpha=self.alpha, limit=self.limit, bias=1.0, interleaved=True)
    h = torch_npu.npu_grouped_matmul([h], list(self.down_proj.unbind(0)),
                                     bias=list(self.down_proj_bias.float().unbind(0)), group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    out = torch_npu.npu_moe_finalize_routing(h, None, None, None, w, idx_map,
                                             ids.to(torch.int32), drop_pad_mode=2)
Fix safety
    Needs prerequisites. The documentation gives the grouped matmul's bias as a list of
    1-D tensors as long as the weight list, so the stacked parameters go in as lists of
    per-expert views (`unbind(0)`: no copy, [in, out] already) with one bias per expert;
    such a list holds at most 128 experts per rank (check `weight_list_at_most_128`),
    and a bfloat16 `x` takes float32 biases. `npu_clipped_swiglu` with
    `interleaved=True` takes the even columns as the clamped, sigmoid-gated half and the
    odd ones as the linear half, as `[..., ::2]` / `[..., 1::2]` do; `bias=1.0` is the
    `up + 1`, `alpha` and `limit` are passed as the model holds them. Ids outside
    `[0, E)` are dropped by `active_expert_range`, as the loop skips them.
References
    catalog/moe/npu_moe_init_routing_v2.toml, npu_grouped_matmul.toml (bias, dtype table,
    single-multiple-single), npu_moe_finalize_routing.toml, catalog/ffn/npu_clipped_swiglu.toml;
    ffn.swiglu_clamped_reject (the activation alone).
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "moe.experts_grouped_matmul_biased_clipped_swiglu",
    "title": "GPT-OSS expert loop (@ with per-expert biases, clamped even/odd SwiGLU) -> init_routing_v2 + biased grouped_matmul + clipped_swiglu + finalize_routing",
    "module": "moe_experts",
    "apis": ["npu_moe_init_routing_v2", "npu_grouped_matmul", "npu_clipped_swiglu", "npu_moe_finalize_routing"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "per_expert_weight_and_bias_lists",
         "en": "Pass the stacked weights as lists of per-expert [in, out] views (gate_up_proj.unbind(0), down_proj.unbind(0)) and the biases as lists of per-expert 1-D tensors, float32 when the activations are bfloat16, built once after loading.",
         "zh": "加载后一次性把堆叠权重按专家拆成[in, out]视图列表（gate_up_proj.unbind(0)、down_proj.unbind(0)），偏置拆成每个专家一个的一维张量列表；激活为bfloat16时偏置用float32。",
         "mechanical": False},
        {"id": "int32_expert_ids",
         "en": "Pass the router's expert ids as int32 (the top-k gives int64).",
         "zh": "把路由输出的专家编号转为int32（topk输出为int64）。",
         "mechanical": True},
    ],
    "checks": ["npu_moe_init_routing_v2:*", "npu_grouped_matmul:*", "npu_clipped_swiglu:*", "npu_moe_finalize_routing:*"],
    "facts": {"moe_site": "experts", "activation": "silu", "glu_clamped": True, "ffn_gated": True, "glu_order": "interleaved",
              "expert_tokens_num_type": 1, "group_list_type": 1},
    "hints": {"class_names": ["GptOssExperts"]},
    "inputs": {
        "tokens": {"shape": ["T", "H"], "dtype": "act"},
        "routing_weights": {"shape": ["T", "K"], "dtype": "act", "init": "uniform", "low": 0.1, "high": 1.0},
        "expert_ids": {"shape": ["T", "K"], "dtype": "int64", "init": "unique_per_row", "high": "E"},
        "gate_up_weights": {"shape": ["E", "H", "2 * I"], "dtype": "act", "scale": 0.5},
        "gate_up_bias": {"shape": ["E", "2 * I"], "dtype": "act", "scale": 0.5},
        "down_weights": {"shape": ["E", "I", "H"], "dtype": "act", "scale": 0.1},
        "down_bias": {"shape": ["E", "H"], "dtype": "act", "scale": 0.1},
        "num_experts": {"dtype": "param", "expr": "E"},
        "alpha": {"dtype": "param", "value": 1.702},
        "limit": {"dtype": "param", "value": 1.5},
    },
    "sizes": {"T": 10, "K": 2, "E": 24, "H": 32, "I": 48},
    "dtypes": ["float32", "bfloat16"],
    "near_misses": [
        {"file": "fixtures/experts_grouped_matmul_biased_clipped_swiglu_nomatch_halves.py",
         "reason": "the gate and up halves are the front and back halves of the projection, not its even and odd columns: npu_clipped_swiglu would need interleaved=False"},
    ],
    "match": {
        "lookalikes": {"lookalike_halves": "fixtures/experts_grouped_matmul_biased_clipped_swiglu_nomatch_halves.py"},
    },
    "doc_zh": """GPT-OSS专家循环（堆叠的[E, in, out]权重用@计算、每个专家带偏置、按奇偶列做截断SwiGLU），替换为路由+带偏置的分组矩阵乘+npu_clipped_swiglu+还原。

功能
    识别GPT-OSS的专家循环：gate_up_proj [E, H, 2I]与gate_up_proj_bias [E, 2I]按
    x[tok] @ gate_up_proj[e] + gate_up_proj_bias[e]计算，gate与up分别取偶数列与奇数列，
    gate.clamp(max=limit)、up.clamp(-limit, limit)、(up + 1) * gate * sigmoid(gate * alpha)，
    再@ down_proj[e] + down_proj_bias[e]，乘以路由权重后用index_add_累加回去。建议改为
    npu_moe_init_routing_v2 -> 对每个专家的gate_up权重及其偏置做npu_grouped_matmul ->
    npu_clipped_swiglu（奇偶列，即默认值）-> 对down权重及其偏置做npu_grouped_matmul ->
    npu_moe_finalize_routing。
原因
    循环对每个专家都要启动两个GEMM、两次加偏置、截断激活的七个逐元素内核、加权和若干索引内核，
    并在torch.where与nonzero处同步；32到128个专家时每层有数百次小内核启动。分组矩阵乘自行加上
    每个专家的偏置。
示例
    for e in hit:
        pos, tok = torch.where(mask[e])
        gate_up = x[tok] @ self.gate_up_proj[e] + self.gate_up_proj_bias[e]
        gate, up = gate_up[..., ::2].clamp(max=self.limit), gate_up[..., 1::2].clamp(-self.limit, self.limit)
        out = ((up + 1) * gate * torch.sigmoid(gate * self.alpha)) @ self.down_proj[e] + self.down_proj_bias[e]
        y.index_add_(0, tok, (out * w[tok, pos, None]).to(y.dtype))
替代写法
    rows, idx_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        x, ids.to(torch.int32), active_num=T * K, expert_num=E, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, E])
    h = torch_npu.npu_grouped_matmul([rows], list(self.gate_up_proj.unbind(0)),
                                     bias=list(self.gate_up_proj_bias.float().unbind(0)), group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    h = torch_npu.npu_clipped_swiglu(h, alpha=self.alpha, limit=self.limit, bias=1.0, interleaved=True)
    h = torch_npu.npu_grouped_matmul([h], list(self.down_proj.unbind(0)),
                                     bias=list(self.down_proj_bias.float().unbind(0)), group_list=counts,
                                     group_type=0, group_list_type=1, split_item=2)[0]
    out = torch_npu.npu_moe_finalize_routing(h, None, None, None, w, idx_map,
                                             ids.to(torch.int32), drop_pad_mode=2)
修复安全性
    需要前置改造。文档规定分组矩阵乘的偏置是与权重列表等长的一维张量列表，因此堆叠参数须以每个专家的
    视图列表传入（unbind(0)：不复制，本身即[in, out]），每个专家一个偏置；这种列表每个rank最多128个
    专家（检查weight_list_at_most_128），bfloat16的x须配float32偏置。npu_clipped_swiglu取
    interleaved=True时，以偶数列为截断并经sigmoid门控的一半、奇数列为线性的一半，与[..., ::2] /
    [..., 1::2]一致；bias=1.0即up + 1，alpha与limit按模型持有的值传入。[0, E)之外的编号由
    active_expert_range丢弃，与循环跳过它们一致。
参考
    catalog/moe/npu_moe_init_routing_v2.toml、npu_grouped_matmul.toml（偏置、数据类型表、
    single-multiple-single）、npu_moe_finalize_routing.toml、catalog/ffn/npu_clipped_swiglu.toml；
    ffn.swiglu_clamped_reject（单独的激活）。
""",
}


def search(tokens, routing_weights, expert_ids, gate_up_weights, gate_up_bias, down_weights, down_bias, num_experts,
           alpha, limit):
    combined = torch.zeros_like(tokens)
    expert_mask = torch.nn.functional.one_hot(expert_ids, num_classes=num_experts).permute(2, 1, 0)
    for e in range(num_experts):
        slot, token_idx = torch.where(expert_mask[e])
        gate_up = tokens[token_idx] @ gate_up_weights[e] + gate_up_bias[e]
        gate, up = gate_up[..., ::2], gate_up[..., 1::2]
        gate = gate.clamp(min=None, max=limit)
        up = up.clamp(min=-limit, max=limit)
        glu = gate * torch.sigmoid(gate * alpha)
        out = ((up + 1) * glu) @ down_weights[e] + down_bias[e]
        weighted = out * routing_weights[token_idx, slot, None]
        combined.index_add_(0, token_idx, weighted.to(combined.dtype))
    return combined


def search_torch_clamp(tokens, routing_weights, expert_ids, gate_up_weights, gate_up_bias, down_weights, down_bias,
                       num_experts, alpha, limit):
    # torch.clamp and torch.matmul spelled as functions, the columns sliced from 0
    combined = torch.zeros_like(tokens)
    expert_mask = torch.nn.functional.one_hot(expert_ids, num_classes=num_experts).permute(2, 1, 0)
    for e in range(num_experts):
        slot, token_idx = torch.where(expert_mask[e])
        gate_up = torch.matmul(tokens[token_idx], gate_up_weights[e]) + gate_up_bias[e]
        gate = torch.clamp(gate_up[..., 0::2], max=limit)
        up = torch.clamp(gate_up[..., 1::2], -limit, limit)
        out = torch.matmul((up + 1) * (gate * torch.sigmoid(gate * alpha)), down_weights[e]) + down_bias[e]
        combined.index_add_(0, token_idx, (out * routing_weights[token_idx, slot, None]).to(combined.dtype))
    return combined


def lookalike_halves(tokens, routing_weights, expert_ids, gate_up_weights, gate_up_bias, down_weights, down_bias,
                     num_experts, alpha, limit):
    # the same activation on the front and back halves of the projection
    combined = torch.zeros_like(tokens)
    expert_mask = torch.nn.functional.one_hot(expert_ids, num_classes=num_experts).permute(2, 1, 0)
    for e in range(num_experts):
        slot, token_idx = torch.where(expert_mask[e])
        gate_up = tokens[token_idx] @ gate_up_weights[e] + gate_up_bias[e]
        gate, up = gate_up.chunk(2, dim=-1)
        gate = gate.clamp(min=None, max=limit)
        up = up.clamp(min=-limit, max=limit)
        glu = gate * torch.sigmoid(gate * alpha)
        out = ((up + 1) * glu) @ down_weights[e] + down_bias[e]
        weighted = out * routing_weights[token_idx, slot, None]
        combined.index_add_(0, token_idx, weighted.to(combined.dtype))
    return combined


def replace(tokens, routing_weights, expert_ids, gate_up_weights, gate_up_bias, down_weights, down_bias, num_experts,
            alpha, limit):
    rows, k = expert_ids.shape
    ids = expert_ids.to(torch.int32)
    sorted_rows, row_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        tokens, ids, active_num=rows * k, expert_num=num_experts, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, num_experts])
    hidden = torch_npu.npu_grouped_matmul([sorted_rows], list(gate_up_weights.unbind(0)),
                                          bias=list(gate_up_bias.float().unbind(0)), group_list=counts,
                                          group_type=0, group_list_type=1, split_item=2)[0]
    hidden = torch_npu.npu_clipped_swiglu(hidden, alpha=alpha, limit=limit, bias=1.0, interleaved=True)
    out = torch_npu.npu_grouped_matmul([hidden], list(down_weights.unbind(0)),
                                       bias=list(down_bias.float().unbind(0)), group_list=counts,
                                       group_type=0, group_list_type=1, split_item=2)[0]
    return torch_npu.npu_moe_finalize_routing(out, None, None, None, routing_weights.to(out.dtype), row_map, ids,
                                              drop_pad_mode=2)


def naive_halves(tokens, routing_weights, expert_ids, gate_up_weights, gate_up_bias, down_weights, down_bias,
                 num_experts, alpha, limit):
    # interleaved=False: the operator would take front and back halves, not even and odd columns.
    rows, k = expert_ids.shape
    ids = expert_ids.to(torch.int32)
    sorted_rows, row_map, counts, _ = torch_npu.npu_moe_init_routing_v2(
        tokens, ids, active_num=rows * k, expert_num=num_experts, expert_tokens_num_type=1,
        expert_tokens_num_flag=True, active_expert_range=[0, num_experts])
    hidden = torch_npu.npu_grouped_matmul([sorted_rows], list(gate_up_weights.unbind(0)),
                                          bias=list(gate_up_bias.float().unbind(0)), group_list=counts,
                                          group_type=0, group_list_type=1, split_item=2)[0]
    hidden = torch_npu.npu_clipped_swiglu(hidden, alpha=alpha, limit=limit, bias=1.0, interleaved=False)
    out = torch_npu.npu_grouped_matmul([hidden], list(down_weights.unbind(0)),
                                       bias=list(down_bias.float().unbind(0)), group_list=counts,
                                       group_type=0, group_list_type=1, split_item=2)[0]
    return torch_npu.npu_moe_finalize_routing(out, None, None, None, routing_weights.to(out.dtype), row_map, ids,
                                              drop_pad_mode=2)
