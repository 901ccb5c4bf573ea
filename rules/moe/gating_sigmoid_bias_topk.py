"""Sigmoid router with a selection bias and a plain top-k over all experts becomes `npu_moe_gating_top_k`.

What it does
    Finds the router that scores every expert with a sigmoid, adds a bias that only
    steers the choice (`e_score_correction_bias`, `expert_bias`), takes the `top_k`
    experts of the biased scores over all experts (no expert groups), gathers their
    unbiased scores and divides them by their sum, with or without a 1e-20 in the
    divisor (MiniMax-M2, Laguna, AFMoE, HunYuan-V3, AXK2 without expert groups). It
    proposes one `torch_npu.npu_moe_gating_top_k` call with one group holding every
    expert (`group_count=1`, `k_group=1`), `norm_type=1` (sigmoid, read from the code)
    and `renorm=0`.
Why
    The router is six or seven small kernels per MoE layer (sigmoid, add, top-k, gather,
    sum, division) on a [tokens, experts] float32 matrix; the operator does them in one
    and returns int32 expert ids that `npu_moe_init_routing_v2` and the dispatch
    operators take as they are.
Example
    scores = torch.sigmoid(router_logits)
    _, ids = torch.topk(scores + self.e_score_correction_bias, self.top_k, dim=-1)
    weights = scores.gather(1, ids)
    weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
Use instead
    weights, ids, _ = torch_npu.npu_moe_gating_top_k(
        router_logits.float(), k=self.top_k, bias=self.e_score_correction_bias.float(),
        k_group=1, group_count=1, group_select_mode=1, renorm=0, norm_type=1,
        routed_scaling_factor=1.0, eps=1e-20)
Fix safety
    Safe under the checks. With one group the group selection keeps every expert, so the
    operator's top-k runs over the biased scores of all experts, as the code's does. The
    sigmoid path of the operator always divides the chosen weights by their sum plus
    `eps`: a router that does not renormalise is not this chain, and the check
    `sigmoid_path_always_renormalises` refuses it where the config says so. Without an
    epsilon in the code's divisor the operator's 1e-20 changes nothing at float32. A
    scaling factor the code multiplies in afterwards (AFMoE's `route_scale`,
    HunYuan-V3's `router_scaling_factor`) stays where it is; passing it as
    `routed_scaling_factor` instead saves that multiply. The ids come out int32 (the
    code's are int64): the numeric check compares them as the same experts per token,
    with `k * 64 <= E` so that CPU top-k returns its picks in descending order as the
    operator does. Weights gathered from the biased scores are another chain and are
    not matched.
References
    catalog/moe/npu_moe_gating_top_k.toml; reference_chains.md (framework_moe_parallel
    gate table); pitfalls.md (norm_type numbering, bias dtype); rules/moe/gating_group_topk.py
    for the same operator with expert groups.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "moe.gating_sigmoid_bias_topk",
    "title": "sigmoid + selection bias + top-k over all experts + renorm -> npu_moe_gating_top_k",
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
    },
    "sizes": {"T": 12, "E": 256},
    "dtypes": ["float32"],
    "match": {"lookalikes": {
        "lookalike_bias_in_weights": "fixtures/gating_sigmoid_bias_topk_nomatch_bias_in_weights.py",
        "lookalike_shared_in_normaliser": {
            "near_miss": "fixtures/gating_sigmoid_bias_topk_nomatch_shared_in_normaliser.py",
            "inputs": {"routed_bias": {"shape": ["E - 2"], "dtype": "float32", "init": "uniform", "low": 0.0, "high": 0.1},
                       "n_shared": {"dtype": "param", "value": 2}}}}},
    "near_misses": [
        {"file": "fixtures/gating_sigmoid_bias_topk_nomatch_bias_in_weights.py",
         "reason": "the weights are gathered from the biased scores: the operator returns the unbiased ones"},
        {"file": "fixtures/gating_sigmoid_bias_topk_nomatch_shared_in_normaliser.py",
         "reason": "the chosen experts' weights are normalised together with the shared experts' sigmoid scores (softmax of logsigmoid over both): the operator's sigmoid path divides by the sum over its k picks only"},
    ],
    "doc_zh": """带选择偏置、在全部专家上直接取top-k的sigmoid路由器，替换为npu_moe_gating_top_k。

功能
    识别这样的路由器：对每个专家做sigmoid打分，加上只影响选择的偏置（e_score_correction_bias、
    expert_bias），在全部专家（不分组）的加偏置得分上取top_k个专家，取回它们未加偏置的得分并除以
    其和（除数可带1e-20），见于MiniMax-M2、Laguna、AFMoE、HunYuan-V3以及不分组的AXK2。建议改为一次
    torch_npu.npu_moe_gating_top_k调用：一个组包含全部专家（group_count=1、k_group=1），
    norm_type=1（sigmoid，取自代码），renorm=0。
原因
    每个MoE层的路由器要在[token数, 专家数]的float32矩阵上跑六七个小内核（sigmoid、加法、top-k、
    gather、求和、除法）；该算子一次完成，并返回int32专家编号，可直接交给npu_moe_init_routing_v2
    和分发算子。
示例
    scores = torch.sigmoid(router_logits)
    _, ids = torch.topk(scores + self.e_score_correction_bias, self.top_k, dim=-1)
    weights = scores.gather(1, ids)
    weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
替代写法
    weights, ids, _ = torch_npu.npu_moe_gating_top_k(
        router_logits.float(), k=self.top_k, bias=self.e_score_correction_bias.float(),
        k_group=1, group_count=1, group_select_mode=1, renorm=0, norm_type=1,
        routed_scaling_factor=1.0, eps=1e-20)
修复安全性
    在检查通过时安全。只有一个组时组选择保留全部专家，因此算子的top-k与代码一样在全部专家的加偏置
    得分上进行。算子的sigmoid路径总会把选中的权重除以其和加eps：不做重新归一化的路由器不是这条链，
    配置说明时由检查sigmoid_path_always_renormalises拒绝。代码的除数没有epsilon时，算子的1e-20
    在float32下不改变结果。代码之后再乘的缩放系数（AFMoE的route_scale、HunYuan-V3的
    router_scaling_factor）保留在原处；改为以routed_scaling_factor传入可省去这次乘法。专家编号
    输出为int32（代码中为int64）：数值检查按每个token的同一组专家比较，并保证k * 64 <= E，使CPU上
    的top-k与算子一样按降序给出。从加偏置得分中取权重的是另一条链，不匹配。
参考
    catalog/moe/npu_moe_gating_top_k.toml；reference_chains.md（framework_moe_parallel门控表）；
    pitfalls.md（norm_type编号、偏置数据类型）；rules/moe/gating_group_topk.py（同一算子的分组形式）。
""",
}


def search(router_logits, correction_bias, top_k):
    # an epsilon in the divisor, the picks unsorted (HunYuan-V3)
    scores = torch.sigmoid(router_logits)
    _, chosen = torch.topk(scores + correction_bias, top_k, dim=-1, sorted=False)
    mix = scores.gather(1, chosen)
    mix = mix / (mix.sum(dim=-1, keepdim=True) + 1e-20)
    return mix, chosen


def search_dim1(router_logits, correction_bias, top_k):
    # the expert axis named 1, an epsilon in the divisor (AFMoE)
    scores = torch.sigmoid(router_logits)
    _, chosen = torch.topk(scores + correction_bias, k=top_k, dim=1)
    mix = scores.gather(dim=1, index=chosen)
    mix = mix / (mix.sum(dim=-1, keepdim=True) + 1e-20)
    return mix, chosen


def search_plain_sum(router_logits, correction_bias, top_k):
    # the sum alone, the gather along axis -1 (Laguna)
    scores = torch.sigmoid(router_logits)
    _, chosen = torch.topk(scores + correction_bias, top_k, dim=-1)
    mix = scores.gather(-1, chosen)
    mix = mix / mix.sum(dim=-1, keepdim=True)
    return mix, chosen


def search_plain_sum_unsorted(router_logits, correction_bias, top_k):
    # the sum alone, the picks unsorted (MiniMax-M2)
    scores = torch.sigmoid(router_logits)
    _, chosen = torch.topk(scores + correction_bias, top_k, dim=-1, sorted=False)
    mix = scores.gather(1, chosen)
    mix = mix / mix.sum(dim=-1, keepdim=True)
    return mix, chosen


def search_indexed(router_logits, correction_bias, top_k):
    # the ids taken with [1], the sum alone
    scores = torch.sigmoid(router_logits)
    chosen = torch.topk(scores + correction_bias, top_k, dim=-1)[1]
    mix = scores.gather(1, chosen)
    mix = mix / mix.sum(dim=-1, keepdim=True)
    return mix, chosen


def search_indexed_unsorted_eps(router_logits, correction_bias, top_k):
    # the ids taken with [1] from an unsorted top-k, the divisor with its epsilon named
    # apart (AXK2 without expert groups)
    scores = torch.sigmoid(router_logits)
    chosen = torch.topk(scores + correction_bias, k=top_k, dim=-1, sorted=False)[1]
    mix = scores.gather(1, chosen)
    denominator = mix.sum(dim=-1, keepdim=True) + 1e-20
    mix = mix / denominator
    return mix, chosen


def replace(router_logits, correction_bias, top_k):
    mix, chosen, _ = torch_npu.npu_moe_gating_top_k(
        router_logits, k=top_k, bias=correction_bias.to(router_logits.dtype), k_group=1, group_count=1,
        group_select_mode=1, renorm=0, norm_type=1, routed_scaling_factor=1.0, eps=1e-20)
    return mix, chosen.long()


def naive_softmax_norm_type(router_logits, correction_bias, top_k):
    # norm_type=0 is softmax: the mistake the inverted English parameter text invites.
    mix, chosen, _ = torch_npu.npu_moe_gating_top_k(
        router_logits, k=top_k, bias=correction_bias, k_group=1, group_count=1, group_select_mode=1,
        renorm=0, norm_type=0, routed_scaling_factor=1.0)
    return mix, chosen.long()


def lookalike_shared_in_normaliser(router_logits, correction_bias, top_k, routed_bias=None, n_shared=2):
    # shared experts scored by the same router: the top-k picks among the routed ones, and the
    # normaliser holds the shared experts' sigmoid scores too (softmax of logsigmoid = p / sum p)
    scores = router_logits.sigmoid()
    routed = scores[..., :-n_shared]
    chosen = torch.topk(routed + routed_bias, top_k, dim=-1, sorted=False)[1]
    picked = torch.cat([router_logits[..., :-n_shared].gather(-1, chosen), router_logits[..., -n_shared:]], dim=-1)
    log_probs = torch.nn.functional.logsigmoid(picked)
    mix = torch.exp(log_probs - torch.logsumexp(log_probs, dim=-1, keepdim=True))
    return mix, chosen


def lookalike_bias_in_weights(router_logits, correction_bias, top_k):
    # the weights taken from the biased scores: the bias changes them too
    biased = torch.sigmoid(router_logits) + correction_bias
    chosen = torch.topk(biased, top_k, dim=-1)[1]
    mix = biased.gather(1, chosen)
    mix = mix / mix.sum(dim=-1, keepdim=True)
    return mix, chosen
