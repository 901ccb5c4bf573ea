"""Sigmoid router with a selection bias, a plain top-k and a model-chosen epsilon in the renormalisation becomes `npu_moe_gating_top_k(eps=...)`.

What it does
    Finds the router of rule moe.gating_sigmoid_bias_topk (sigmoid scores, a bias that
    only steers the choice, top-k over all experts, the unbiased scores of the picks
    gathered and divided by their sum) where the divisor carries an epsilon of the model's
    own, such as LFM2-MoE's `1e-6`. It proposes one `torch_npu.npu_moe_gating_top_k` call
    with one group holding every expert, `norm_type=1` (sigmoid) and that epsilon passed
    as the operator's documented `eps` argument.
Why
    The router is six small kernels per MoE layer (sigmoid, add, top-k, gather, sum plus
    epsilon, division); the operator does them in one and returns the int32 ids the
    routing operators take. Its sigmoid path divides by `sum + eps` with `eps` a keyword
    argument (default 1e-20), so a different epsilon is passed, not approximated.
Example
    scores = router_logits.sigmoid()
    _, ids = torch.topk(scores + expert_bias, k=self.top_k, dim=-1)
    weights = torch.gather(scores, dim=1, index=ids)
    weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-6)
Use instead
    weights, ids, _ = torch_npu.npu_moe_gating_top_k(
        router_logits, k=self.top_k, bias=expert_bias.to(router_logits.dtype),
        k_group=1, group_count=1, group_select_mode=1, renorm=0, norm_type=1,
        routed_scaling_factor=1.0, eps=1e-6)
Fix safety
    Safe under the checks, as moe.gating_sigmoid_bias_topk: one group keeps every expert,
    the sigmoid path always renormalises (the check sigmoid_path_always_renormalises
    refuses a router whose config turns it off). The epsilon is whatever value the code
    adds, bound from the match; the operator's default 1e-20 would give other weights
    where the sum of the picks is small, so the call must name it. A scaling factor
    multiplied in afterwards stays where it is (or moves into routed_scaling_factor).
    The bias is cast to the logits' dtype as the operator requires; with bfloat16 logits
    and a float32 bias that rounding can move a near-tie pick, so the numeric check runs
    float32 logits. The ids come out int32. Weights taken from the biased scores are
    another chain and are not matched.
References
    catalog/moe/npu_moe_gating_top_k.toml (eps parameter, sigmoid-path formula);
    rules/moe/gating_sigmoid_bias_topk.py; pitfalls.md (norm_type numbering, bias dtype).
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "moe.gating_sigmoid_bias_topk_eps",
    "title": "sigmoid + selection bias + top-k + renorm with the model's epsilon -> npu_moe_gating_top_k(eps=...)",
    "module": "moe_gate",
    "apis": ["npu_moe_gating_top_k"],
    "stages": ["prefill", "decode"],
    "when": "moe",
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_moe_gating_top_k:*"],
    "facts": {"scoring_func": "sigmoid", "has_correction_bias": True, "norm_topk_prob": True,
              "group_count": 1, "k_group": 1},
    "hints": {"class_names": ["TopKRouter", "Router", "MoeRouter", "Gate"]},
    "inputs": {
        "router_logits": {"shape": ["T", "E"], "dtype": "float32"},
        "correction_bias": {"shape": ["E"], "dtype": "float32", "init": "uniform", "low": 0.0, "high": 0.1},
        "top_k": {"dtype": "param", "value": 4},
        "eps": {"dtype": "param", "value": 0.5},
    },
    "sizes": {"T": 12, "E": 256},
    "dtypes": ["float32"],
    "match": {"lookalikes": {"lookalike_bias_in_weights": "fixtures/gating_sigmoid_bias_topk_eps_nomatch_bias_in_weights.py"}},
    "near_misses": [
        {"file": "fixtures/gating_sigmoid_bias_topk_eps_nomatch_bias_in_weights.py",
         "reason": "the weights are gathered from the biased scores: the operator returns the unbiased ones"},
    ],
    "doc_zh": """带选择偏置、直接top-k、且重新归一化分母带模型自定eps的sigmoid路由器，替换为npu_moe_gating_top_k(eps=...)。

功能
    识别与规则moe.gating_sigmoid_bias_topk相同的路由器（sigmoid打分、只影响选择的偏置、在全部
    专家上取top-k、取被选专家未加偏置的得分并除以其和），但分母中加的是模型自己的小量，
    例如LFM2-MoE的1e-6。建议调用一次torch_npu.npu_moe_gating_top_k：一个组包含全部专家，
    norm_type=1（sigmoid），并把该小量作为算子文档中的eps参数传入。
原因
    路由器每个MoE层有六个小内核（sigmoid、加法、top-k、gather、求和加eps、除法）；算子一次
    完成，并返回路由算子直接使用的int32专家编号。算子的sigmoid路径除以sum + eps，eps是关键字
    参数（默认1e-20），因此不同的小量是直接传入，而不是近似。
示例
    scores = router_logits.sigmoid()
    _, ids = torch.topk(scores + expert_bias, k=self.top_k, dim=-1)
    weights = torch.gather(scores, dim=1, index=ids)
    weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-6)
替代写法
    weights, ids, _ = torch_npu.npu_moe_gating_top_k(
        router_logits, k=self.top_k, bias=expert_bias.to(router_logits.dtype),
        k_group=1, group_count=1, group_select_mode=1, renorm=0, norm_type=1,
        routed_scaling_factor=1.0, eps=1e-6)
修复安全性
    在检查条件下安全，与moe.gating_sigmoid_bias_topk相同：一个组保留全部专家，sigmoid路径总会
    重新归一化（配置关闭归一化时，检查项sigmoid_path_always_renormalises会拒绝）。eps取代码中
    实际加的值，由匹配绑定；若用算子默认的1e-20，在被选得分之和较小时权重会不同，因此调用时
    必须写明。之后相乘的缩放系数保持原位（或改为routed_scaling_factor传入）。偏置按算子要求
    转换为logits的dtype；bfloat16的logits配float32偏置时，这一舍入可能改变接近并列的选择，
    因此数值检查使用float32的logits。专家编号输出为int32。从加偏置得分中取权重的写法是另一条
    链，不匹配。
参考
    catalog/moe/npu_moe_gating_top_k.toml（eps参数、sigmoid路径公式）；
    rules/moe/gating_sigmoid_bias_topk.py；pitfalls.md（norm_type编号、偏置dtype）。
""",
}


def search(router_logits, correction_bias, top_k, eps):
    # method sigmoid, torch.gather on axis 1 (LFM2-MoE's spelling of the steps)
    scores = router_logits.sigmoid()
    _, chosen = torch.topk(scores + correction_bias, k=top_k, dim=-1)
    mix = torch.gather(scores, dim=1, index=chosen)
    mix = mix / (mix.sum(dim=-1, keepdim=True) + eps)
    return mix, chosen


def search_functional(router_logits, correction_bias, top_k, eps):
    scores = torch.sigmoid(router_logits)
    _, chosen = torch.topk(scores + correction_bias, top_k, dim=-1)
    mix = scores.gather(1, chosen)
    mix = mix / (mix.sum(dim=-1, keepdim=True) + eps)
    return mix, chosen


def search_last_axis(router_logits, correction_bias, top_k, eps):
    # the gather along -1, the ids taken with [1]
    scores = torch.sigmoid(router_logits)
    chosen = torch.topk(scores + correction_bias, top_k, dim=-1)[1]
    mix = scores.gather(-1, chosen)
    mix = mix / (mix.sum(-1, keepdim=True) + eps)
    return mix, chosen


def lookalike_bias_in_weights(router_logits, correction_bias, top_k, eps):
    # the weights taken from the biased scores: the bias changes them too
    biased = torch.sigmoid(router_logits) + correction_bias
    chosen = torch.topk(biased, top_k, dim=-1)[1]
    mix = biased.gather(1, chosen)
    mix = mix / (mix.sum(dim=-1, keepdim=True) + eps)
    return mix, chosen


def replace(router_logits, correction_bias, top_k, eps):
    mix, chosen, _ = torch_npu.npu_moe_gating_top_k(
        router_logits, k=top_k, bias=correction_bias.to(router_logits.dtype), k_group=1, group_count=1,
        group_select_mode=1, renorm=0, norm_type=1, routed_scaling_factor=1.0, eps=eps)
    return mix, chosen.long()


def naive_default_eps(router_logits, correction_bias, top_k, eps):
    # the operator's default epsilon instead of the model's: other weights
    mix, chosen, _ = torch_npu.npu_moe_gating_top_k(
        router_logits, k=top_k, bias=correction_bias.to(router_logits.dtype), k_group=1, group_count=1,
        group_select_mode=1, renorm=0, norm_type=1, routed_scaling_factor=1.0)
    return mix, chosen.long()
