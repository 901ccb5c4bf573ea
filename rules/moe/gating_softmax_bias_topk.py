"""Softmax router with a selection-only bias and a plain top-k over all experts becomes `npu_moe_gating_top_k` on its softmax path.

What it does
    Finds the router that scores every expert with a softmax, adds a bias that only
    steers the choice (`e_score_correction_bias`, ERNIE-4.5's `moe_statics`), takes the
    `top_k` experts of the biased scores over all experts (no expert groups) and gathers
    their unbiased softmax scores. It proposes one `torch_npu.npu_moe_gating_top_k` call
    with `norm_type=0` (softmax, read from the code), the bias, one group holding every
    expert (`group_count=1`, `k_group=1`) and `renorm=0`; a renormalisation after the
    gather (ERNIE-4.5 divides by the clamped sum) stays in torch after the call.
Why
    The softmax over all experts, the bias add, the top-k and the gather are four kernels
    per MoE layer on a [tokens, experts] float32 matrix, in prefill and in decode; the
    operator runs them as one and returns int32 expert ids that
    `npu_moe_init_routing_v2` and the dispatch operators take as they are.
    `npu_moe_gating_top_k_softmax` has no bias input and cannot take this router.
Example
    probs = F.softmax(router_logits, dim=1, dtype=torch.float)
    _, ids = torch.topk(probs + self.e_score_correction_bias, self.top_k, dim=-1)
    weights = torch.gather(probs, dim=-1, index=ids)
    weights = weights / torch.clamp(weights.sum(dim=-1, keepdim=True), min=self.norm_min)
Use instead
    weights, ids, _ = torch_npu.npu_moe_gating_top_k(
        router_logits.float(), k=self.top_k, bias=self.e_score_correction_bias.float(),
        k_group=1, group_count=1, group_select_mode=0, renorm=0, norm_type=0)
    weights = weights / torch.clamp(weights.sum(dim=-1, keepdim=True), min=self.norm_min)
Fix safety
    Safe under the checks. `norm_type` comes from the score function the code applies:
    0 is softmax in the reference code of both documentation pages and on the Chinese
    page (the English parameter text states the reverse; the catalog pitfall says so),
    and the numeric check runs the operator's documented formula. On the softmax path
    the operator returns the chosen scores as they are, exactly what the gather gives:
    it neither renormalises nor scales (`routed_scaling_factor` stays 1.0), so a
    division by their sum, with or without a clamp or an epsilon, stays after the call
    (check `softmax_renorm_not_fused`). With one group the group step keeps every
    expert. The bias must have the logits' dtype (float32 in ERNIE-4.5, a [1, E]
    parameter squeezed to [E]). The ids come out int32; the numeric check keeps
    `k * 64 <= E` so that CPU top-k returns its picks in descending order as the
    operator does. Weights gathered from the biased scores are another chain and are not
    matched.
References
    catalog/moe/npu_moe_gating_top_k.toml; pitfalls.md (norm_type numbering, bias
    dtype, renorm only 0); rules/moe/gating_sigmoid_bias_topk.py (the sigmoid path);
    rules/moe/gating_softmax_topk.py (no bias).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "moe.gating_softmax_bias_topk",
    "title": "softmax + selection bias + top-k over all experts -> npu_moe_gating_top_k (norm_type=0; renorm stays in torch)",
    "module": "moe_gate",
    "apis": ["npu_moe_gating_top_k"],
    "stages": ["prefill", "decode"],
    "when": "moe",
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_moe_gating_top_k:*"],
    "facts": {"scoring_func": "softmax", "has_correction_bias": True, "group_count": 1, "k_group": 1},
    "hints": {"class_names": ["Ernie4_5_MoeTopKRouter", "Ernie4_5_MoeStatics"]},
    "inputs": {
        "router_logits": {"shape": ["T", "E"], "dtype": "float32"},
        "correction_bias": {"shape": ["E"], "dtype": "float32", "init": "uniform", "low": 0.0, "high": 0.01},
        "top_k": {"dtype": "param", "value": 4},
    },
    "sizes": {"T": 12, "E": 256},
    "dtypes": ["float32"],
    "match": {"lookalikes": {"lookalike_bias_in_weights": "fixtures/gating_softmax_bias_topk_nomatch_bias_in_weights.py"}},
    "near_misses": [
        {"file": "fixtures/gating_softmax_bias_topk_nomatch_bias_in_weights.py",
         "reason": "the weights are gathered from the biased scores: the operator returns the unbiased softmax scores"},
    ],
    "doc_zh": """带选择偏置、在全部专家上直接取top-k的softmax路由器，替换为npu_moe_gating_top_k的softmax路径。

功能
    识别这样的路由器：对每个专家做softmax打分，加上只影响选择的偏置（e_score_correction_bias、
    ERNIE-4.5的moe_statics），在全部专家（不分组）的加偏置得分上取top_k个专家，并取回它们未加偏置
    的softmax得分。建议改为一次torch_npu.npu_moe_gating_top_k调用：norm_type=0（softmax，取自
    代码），传入偏置，一个组包含全部专家（group_count=1、k_group=1），renorm=0；gather之后的重新
    归一化（ERNIE-4.5除以截断下限后的和）留在调用之后的torch中。
原因
    对全部专家的softmax、加偏置、top-k和gather在每个MoE层是[token数, 专家数]的float32矩阵上的
    四个内核，预填充和解码都有；算子一次完成，并返回int32专家编号，可直接交给
    npu_moe_init_routing_v2和分发算子。npu_moe_gating_top_k_softmax没有偏置输入，无法承接这种
    路由器。
示例
    probs = F.softmax(router_logits, dim=1, dtype=torch.float)
    _, ids = torch.topk(probs + self.e_score_correction_bias, self.top_k, dim=-1)
    weights = torch.gather(probs, dim=-1, index=ids)
    weights = weights / torch.clamp(weights.sum(dim=-1, keepdim=True), min=self.norm_min)
替代写法
    weights, ids, _ = torch_npu.npu_moe_gating_top_k(
        router_logits.float(), k=self.top_k, bias=self.e_score_correction_bias.float(),
        k_group=1, group_count=1, group_select_mode=0, renorm=0, norm_type=0)
    weights = weights / torch.clamp(weights.sum(dim=-1, keepdim=True), min=self.norm_min)
修复安全性
    在检查通过时安全。norm_type取自代码实际使用的打分函数：两种语言文档的等价代码及中文参数说明中
    0为softmax（英文参数说明写反了，目录中的注意事项已说明），数值检查按算子文档给出的公式运行。
    softmax路径下算子按原样返回选中的得分，与gather的结果相同：既不重新归一化也不缩放
    （routed_scaling_factor保持1.0），因此除以其和（无论是否带截断下限或epsilon）留在调用之后
    （检查softmax_renorm_not_fused）。只有一个组时组选择保留全部专家。偏置的数据类型须与logits
    相同（ERNIE-4.5中为float32，是压缩为[E]的[1, E]参数）。专家编号输出为int32；数值检查保证
    k * 64 <= E，使CPU上的top-k与算子一样按降序给出。从加偏置得分中取权重的是另一条链，不匹配。
参考
    catalog/moe/npu_moe_gating_top_k.toml；pitfalls.md（norm_type编号、偏置数据类型、renorm仅支持0）；
    rules/moe/gating_sigmoid_bias_topk.py（sigmoid路径）；rules/moe/gating_softmax_topk.py（无偏置）。
""",
}


def search(router_logits, correction_bias, top_k):
    # the ids unpacked, the gather as a function with keywords (ERNIE-4.5)
    probs = F.softmax(router_logits, dim=1, dtype=torch.float)
    _, chosen = torch.topk(probs + correction_bias, top_k, dim=-1)
    weights = torch.gather(probs, dim=-1, index=chosen)
    return weights, chosen


def search_method(router_logits, correction_bias, top_k):
    # method spellings, the ids taken with [1]
    probs = router_logits.float().softmax(dim=-1)
    chosen = (probs + correction_bias).topk(top_k, dim=-1)[1]
    weights = probs.gather(1, chosen)
    return weights, chosen


def search_unsorted(router_logits, correction_bias, top_k):
    # the picks unsorted: the same k pairs; CPU top-k returns them in descending order
    # when k * 64 <= E, as the sizes here make it
    probs = torch.softmax(router_logits, dim=-1)
    _, chosen = torch.topk(probs + correction_bias, k=top_k, dim=-1, sorted=False)
    weights = probs.gather(-1, chosen)
    return weights, chosen


def replace(router_logits, correction_bias, top_k):
    weights, chosen, _ = torch_npu.npu_moe_gating_top_k(
        router_logits, k=top_k, bias=correction_bias.to(router_logits.dtype), k_group=1, group_count=1,
        group_select_mode=0, renorm=0, norm_type=0, routed_scaling_factor=1.0)
    return weights, chosen.long()


def naive_sigmoid_norm_type(router_logits, correction_bias, top_k):
    # norm_type=1 is sigmoid (and renormalises): the mistake the inverted English parameter text invites.
    weights, chosen, _ = torch_npu.npu_moe_gating_top_k(
        router_logits, k=top_k, bias=correction_bias, k_group=1, group_count=1, group_select_mode=0,
        renorm=0, norm_type=1, routed_scaling_factor=1.0)
    return weights, chosen.long()


def naive_softmax_topk_without_bias(router_logits, correction_bias, top_k):
    # npu_moe_gating_top_k_softmax has no bias input: the choice loses the bias.
    weights, chosen, _ = torch_npu.npu_moe_gating_top_k_softmax(router_logits, None, k=top_k)
    return weights, chosen.long()


def lookalike_bias_in_weights(router_logits, correction_bias, top_k):
    # the weights taken from the biased scores: the bias changes them too
    biased = torch.softmax(router_logits, dim=-1) + correction_bias
    chosen = torch.topk(biased, top_k, dim=-1)[1]
    weights = biased.gather(1, chosen)
    return weights, chosen
