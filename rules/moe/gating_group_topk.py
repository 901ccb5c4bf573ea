"""Sigmoid router with a correction bias and group-limited top-k becomes `npu_moe_gating_top_k`.

What it does
    Finds DeepSeek-V3's `noaux_tc` router: sigmoid scores, a selection-only bias
    (`e_score_correction_bias`) added to them, the experts split into `n_group` groups
    each scored by the sum of its two best entries, the `topk_group` best groups kept,
    the `top_k` best experts of those taken, their unbiased scores gathered,
    renormalised to sum 1 and multiplied by `routed_scaling_factor`. It proposes one
    `torch_npu.npu_moe_gating_top_k` call with `norm_type=1` (sigmoid, taken from the
    score function the code applies), `group_select_mode=1` and `renorm=0`.
Why
    About a dozen small kernels per MoE layer (sigmoid, add, two top-k, a scatter, a
    masked fill, a gather, a sum, a division, a multiply) become one. The ids come out
    as int32, ready for `npu_moe_init_routing_v2` or the dispatch operators, in prefill
    and in decode.
Example
    scores = logits.sigmoid()
    choice = scores + self.e_score_correction_bias
    ...group top-2 sum, keep topk_group groups, mask the rest...
    ids = torch.topk(choice, self.top_k, dim=-1)[1]
    weights = scores.gather(1, ids)
    weights = weights / (weights.sum(-1, keepdim=True) + 1e-20) * self.routed_scaling_factor
Use instead
    weights, ids, _ = torch_npu.npu_moe_gating_top_k(
        logits.float(), k=self.top_k, bias=self.e_score_correction_bias.float(),
        k_group=self.topk_group, group_count=self.n_group, group_select_mode=1,
        renorm=0, norm_type=1, routed_scaling_factor=self.routed_scaling_factor, eps=1e-20)
Fix safety
    Safe under the checks. `norm_type` comes from the score function in the code
    (sigmoid -> 1), never from the model's name: a softmax-scored router matched here
    would be a bug, and the catalog pitfall on the inverted English parameter text
    applies. The sigmoid path always renormalises, so a router with
    `norm_topk_prob = False` is refused by the check `sigmoid_path_always_renormalises`.
    The bias must have the logits' dtype (float32 in DeepSeek's code: keep both float32).
    `routed_scaling_factor` is applied inside the operator; the multiply after it goes.
    The numeric check keeps `k * 64 <= E` so that CPU `torch.topk(..., sorted=False)`
    returns its picks in descending order, as the operator does; on other sizes the
    model's own order of the k slots is arbitrary and only the set is defined.
References
    catalog/moe/npu_moe_gating_top_k.toml; reference_chains.md (framework_moe_parallel
    gate table); pitfalls.md (norm_type numbering, renorm only 0, bias dtype).
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "moe.gating_group_topk",
    "title": "sigmoid + correction bias + group-limited top-k + renorm + scale -> npu_moe_gating_top_k",
    "module": "moe_gate",
    "apis": ["npu_moe_gating_top_k"],
    "stages": ["prefill", "decode"],
    "when": "moe",
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_moe_gating_top_k:*"],
    "facts": {"scoring_func": "sigmoid", "has_correction_bias": True, "norm_topk_prob": True},
    "hints": {"class_names": ["DeepseekV3TopkRouter", "DeepseekV3MoE", "Gate", "MoEGate"]},
    "inputs": {
        "router_logits": {"shape": ["T", "E"], "dtype": "float32"},
        "correction_bias": {"shape": ["E"], "dtype": "float32", "init": "uniform", "low": 0.0, "high": 0.1},
        "num_tokens": {"dtype": "param", "expr": "T"},
        "num_experts": {"dtype": "param", "expr": "E"},
        "n_group": {"dtype": "param", "expr": "G"},
        "topk_group": {"dtype": "param", "value": 3},
        "top_k": {"dtype": "param", "value": 4},
        "routed_scaling_factor": {"dtype": "param", "value": 2.5},
    },
    "sizes": {"T": 12, "E": 256, "G": 8},
    "dtypes": ["float32"],
    "match": {"lookalikes": {"lookalike_bias_in_weights": "fixtures/gating_group_topk_nomatch_bias_in_weights.py",
                             "lookalike_softmax_group_max": "fixtures/gating_group_topk_nomatch_softmax_max.py"}},
    "near_misses": [
        {"file": "fixtures/gating_group_topk_nomatch_softmax_max.py",
         "reason": "the router scores with softmax and ranks groups by their maximum without a bias (DeepSeek-V2 group_limited_greedy): a sigmoid gate would change the weights"},
        {"file": "fixtures/gating_group_topk_nomatch_bias_in_weights.py",
         "reason": "the weights are gathered from the biased scores: the operator returns the unbiased ones"},
    ],
    "doc_zh": """带修正偏置和分组限制top-k的sigmoid路由器，替换为npu_moe_gating_top_k。

功能
    识别DeepSeek-V3的noaux_tc路由器：sigmoid打分，加上只影响选择的偏置
    （e_score_correction_bias），把专家分成n_group组并以组内前两名之和为组得分，保留得分
    最高的topk_group个组，在其中取top_k个专家，取回它们未加偏置的得分，重新归一化使和为1，
    再乘以routed_scaling_factor。建议改为一次torch_npu.npu_moe_gating_top_k调用，
    norm_type=1（sigmoid，取自代码实际使用的打分函数）、group_select_mode=1、renorm=0。
原因
    每个MoE层约十几个小内核（sigmoid、加法、两次top-k、scatter、masked_fill、gather、求和、
    除法、乘法）合为一个。专家编号直接为int32，可直接交给npu_moe_init_routing_v2或分发算子，
    预填充和解码都受益。
示例
    scores = logits.sigmoid()
    choice = scores + self.e_score_correction_bias
    ...组内前两名求和，保留topk_group个组，屏蔽其余...
    ids = torch.topk(choice, self.top_k, dim=-1)[1]
    weights = scores.gather(1, ids)
    weights = weights / (weights.sum(-1, keepdim=True) + 1e-20) * self.routed_scaling_factor
替代写法
    weights, ids, _ = torch_npu.npu_moe_gating_top_k(
        logits.float(), k=self.top_k, bias=self.e_score_correction_bias.float(),
        k_group=self.topk_group, group_count=self.n_group, group_select_mode=1,
        renorm=0, norm_type=1, routed_scaling_factor=self.routed_scaling_factor, eps=1e-20)
修复安全性
    在检查通过时安全。norm_type取自代码中的打分函数（sigmoid -> 1），绝不按模型名称推断：
    softmax打分的路由器若在此匹配即为错误，且须注意目录中关于英文参数说明写反的注意事项。
    sigmoid路径总会重新归一化，因此norm_topk_prob = False的路由器由检查
    sigmoid_path_always_renormalises拒绝。偏置的数据类型须与logits一致（DeepSeek代码中均为
    float32，保持float32即可）。routed_scaling_factor在算子内部已乘上，之后的乘法应删除。
    数值检查保持k * 64 <= E，使CPU上torch.topk(..., sorted=False)按降序返回所选专家，与算子
    一致；其他尺寸下模型自身对k个槽位的顺序不确定，只有集合是确定的。
参考
    catalog/moe/npu_moe_gating_top_k.toml；reference_chains.md（framework_moe_parallel门控表）；
    pitfalls.md（norm_type编号、renorm仅支持0、偏置数据类型）。
""",
}


def search(router_logits, correction_bias, num_tokens, num_experts, n_group, topk_group, top_k, routed_scaling_factor):
    # Hub-style router: the group mask is built with zeros_like + scatter_ and expanded.
    probs = router_logits.sigmoid()
    biased = probs.view(-1, num_experts) + correction_bias.unsqueeze(0)
    per_group = biased.view(-1, n_group, num_experts // n_group).topk(2, dim=-1)[0].sum(dim=-1)
    best_groups = torch.topk(per_group, k=topk_group, dim=-1, sorted=False)[1]
    kept = torch.zeros_like(per_group)
    kept.scatter_(1, best_groups, 1)
    expert_kept = kept.unsqueeze(-1).expand(-1, n_group, num_experts // n_group).reshape(-1, num_experts)
    biased = biased.masked_fill(~expert_kept.bool(), 0.0)
    chosen = torch.topk(biased, k=top_k, dim=-1, sorted=False)[1]
    mix = probs.gather(1, chosen)
    total = mix.sum(dim=-1, keepdim=True) + 1e-20
    mix /= total
    mix = mix * routed_scaling_factor
    return mix, chosen


def search_masked_inf(router_logits, correction_bias, num_tokens, num_experts, n_group, topk_group, top_k,
                      routed_scaling_factor):
    # Current HF style: the bias added to the scores as they are, the experts of
    # the dropped groups set to -inf before the final top-k.
    probs = router_logits.sigmoid()
    biased = probs + correction_bias
    per_group = biased.view(-1, n_group, num_experts // n_group).topk(2, dim=-1)[0].sum(dim=-1)
    best_groups = torch.topk(per_group, k=topk_group, dim=-1, sorted=False)[1]
    kept = torch.zeros_like(per_group)
    kept.scatter_(1, best_groups, 1)
    expert_kept = kept.unsqueeze(-1).expand(-1, n_group, num_experts // n_group).reshape(-1, num_experts)
    biased = biased.masked_fill(~expert_kept.bool(), float("-inf"))
    chosen = torch.topk(biased, k=top_k, dim=-1, sorted=False)[1]
    mix = probs.gather(1, chosen)
    total = mix.sum(dim=-1, keepdim=True) + 1e-20
    mix /= total
    mix = mix * routed_scaling_factor
    return mix, chosen


def search_new_ones_mask(router_logits, correction_bias, num_tokens, num_experts, n_group, topk_group, top_k,
                         routed_scaling_factor):
    # Reference-implementation style: a boolean drop mask from new_ones + scatter_(False).
    probs = router_logits.sigmoid()
    biased = probs + correction_bias
    biased = biased.view(num_tokens, n_group, -1)
    per_group = biased.topk(2, dim=-1)[0].sum(dim=-1)
    best_groups = per_group.topk(topk_group, dim=-1)[1]
    dropped = biased.new_ones(num_tokens, n_group, dtype=torch.bool).scatter_(1, best_groups, False)
    biased = biased.masked_fill_(dropped.unsqueeze(-1), float("-inf")).flatten(1)
    chosen = torch.topk(biased, top_k, dim=-1)[1]
    mix = probs.gather(1, chosen)
    mix /= mix.sum(dim=-1, keepdim=True)
    mix *= routed_scaling_factor
    return mix, chosen


def search_keep_mask(router_logits, correction_bias, num_tokens, num_experts, n_group, topk_group, top_k,
                     routed_scaling_factor):
    # A keep mask from zeros_like(bool) + scatter_(True), inverted in masked_fill.
    probs = router_logits.sigmoid()
    biased = probs + correction_bias
    grouped = biased.view(num_tokens, n_group, -1)
    per_group = grouped.topk(2, dim=-1).values.sum(dim=-1)
    best_groups = per_group.topk(topk_group, dim=-1).indices
    keep = torch.zeros_like(per_group, dtype=torch.bool).scatter_(1, best_groups, True)
    grouped = grouped.masked_fill(~keep.unsqueeze(-1), float("-inf"))
    chosen = torch.topk(grouped.flatten(1), top_k, dim=-1, sorted=False).indices
    mix = probs.gather(1, chosen)
    mix = mix / (mix.sum(dim=-1, keepdim=True) + 1e-20)
    mix = mix * routed_scaling_factor
    return mix, chosen


def search_expand_as(router_logits, correction_bias, num_tokens, num_experts, n_group, topk_group, top_k,
                     routed_scaling_factor):
    # The group mask broadcast back with expand_as and the scale applied on the way out.
    probs = router_logits.sigmoid()
    biased = probs + correction_bias.unsqueeze(0)
    grouped = biased.view(num_tokens, n_group, -1)
    per_group = grouped.topk(2, dim=-1)[0].sum(dim=-1)
    best_groups = torch.topk(per_group, k=topk_group, dim=-1, sorted=False)[1]
    kept = torch.zeros_like(per_group).scatter_(1, best_groups, 1)
    expert_kept = kept.unsqueeze(-1).expand_as(grouped).reshape(num_tokens, -1)
    biased = biased.masked_fill(~expert_kept.bool(), 0.0)
    _, chosen = torch.topk(biased, k=top_k, dim=-1, sorted=False)
    mix = probs.gather(1, chosen)
    mix = mix / (mix.sum(dim=-1, keepdim=True) + 1e-20)
    return mix * routed_scaling_factor, chosen


def lookalike_bias_in_weights(router_logits, correction_bias, num_tokens, num_experts, n_group, topk_group, top_k,
                              routed_scaling_factor):
    # the routing weights gathered from the biased scores
    probs = router_logits.sigmoid()
    biased = probs + correction_bias
    grouped = biased.view(num_tokens, n_group, -1)
    per_group = grouped.topk(2, dim=-1).values.sum(dim=-1)
    best_groups = per_group.topk(topk_group, dim=-1).indices
    keep = torch.zeros_like(per_group, dtype=torch.bool).scatter_(1, best_groups, True)
    grouped = grouped.masked_fill(~keep.unsqueeze(-1), float("-inf"))
    chosen = torch.topk(grouped.flatten(1), top_k, dim=-1, sorted=False).indices
    mix = biased.gather(1, chosen)
    mix = mix / (mix.sum(dim=-1, keepdim=True) + 1e-20)
    mix = mix * routed_scaling_factor
    return mix, chosen


def lookalike_softmax_group_max(router_logits, correction_bias, num_tokens, num_experts, n_group, topk_group, top_k,
                                routed_scaling_factor):
    # group-limited greedy: softmax scores, groups ranked by their best expert, no bias
    scores = router_logits.softmax(dim=-1, dtype=torch.float32)
    group_best = scores.view(num_tokens, n_group, -1).max(dim=-1).values
    best_groups = torch.topk(group_best, k=topk_group, dim=-1, sorted=False)[1]
    kept = torch.zeros_like(group_best)
    kept.scatter_(1, best_groups, 1)
    expert_kept = kept.unsqueeze(-1).expand(num_tokens, n_group, scores.shape[-1] // n_group).reshape(num_tokens, -1)
    masked = scores.masked_fill(~expert_kept.bool(), 0.0)
    mix, chosen = torch.topk(masked, k=top_k, dim=-1, sorted=False)
    return mix * routed_scaling_factor, chosen


def replace(router_logits, correction_bias, num_tokens, num_experts, n_group, topk_group, top_k, routed_scaling_factor):
    mix, chosen, _ = torch_npu.npu_moe_gating_top_k(
        router_logits, k=top_k, bias=correction_bias.to(router_logits.dtype), k_group=topk_group,
        group_count=n_group, group_select_mode=1, renorm=0, norm_type=1,
        routed_scaling_factor=routed_scaling_factor, eps=1e-20)
    return mix, chosen.long()


def naive_softmax_norm_type(router_logits, correction_bias, num_tokens, num_experts, n_group, topk_group, top_k,
                            routed_scaling_factor):
    # norm_type=0 is softmax: the mistake the inverted English parameter text invites.
    mix, chosen, _ = torch_npu.npu_moe_gating_top_k(
        router_logits, k=top_k, bias=correction_bias, k_group=topk_group, group_count=n_group,
        group_select_mode=1, renorm=0, norm_type=0, routed_scaling_factor=routed_scaling_factor)
    return mix, chosen.long()


def naive_group_max(router_logits, correction_bias, num_tokens, num_experts, n_group, topk_group, top_k,
                    routed_scaling_factor):
    # group_select_mode=0 ranks groups by their maximum (DeepSeek-V2), not by the top-2 sum.
    mix, chosen, _ = torch_npu.npu_moe_gating_top_k(
        router_logits, k=top_k, bias=correction_bias, k_group=topk_group, group_count=n_group,
        group_select_mode=0, renorm=0, norm_type=1, routed_scaling_factor=routed_scaling_factor)
    return mix, chosen.long()
