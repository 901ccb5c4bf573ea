"""Softmax router followed by top-k becomes `npu_moe_gating_top_k_softmax`.

What it does
    Finds `topk(softmax(router_logits, dim=-1), k)` whose outputs are the routing
    weights and the chosen expert ids (Mixtral, Qwen2-MoE, Qwen3-MoE routers). It proposes
    one `torch_npu.npu_moe_gating_top_k_softmax(router_logits.float(), None, k=k)` call
    and keeps everything after it (the optional `norm_topk_prob` division, the cast back
    to the activation dtype) in torch. A top-k with `sorted=False` (DeepSeek-V2's greedy
    router) is the same k pairs in an order torch leaves open; the operator returns them
    in descending order.
Why
    The softmax over all experts, the top-k selection and the index bookkeeping run as
    one kernel instead of three, and the ids come out as int32, which is what
    `npu_moe_init_routing_v2` and the dispatch operators read. The router runs for every
    token in every MoE layer, in prefill and in decode.
Example
    probs = F.softmax(router_logits, dim=1, dtype=torch.float)
    weights, experts = torch.topk(probs, self.top_k, dim=-1)
Use instead
    weights, experts, _ = torch_npu.npu_moe_gating_top_k_softmax(router_logits.float(), None, k=self.top_k)
    experts = experts.long()   # only where later torch code indexes with it
Fix safety
    Safe. The operator does not renormalise: a `norm_topk_prob` division after the
    top-k stays where it is, after the call. Only for a router that scores with
    softmax, adds no selection bias and picks no expert groups; a sigmoid or
    bias-corrected router (DeepSeek) is `moe.gating_group_topk`, never this one. The
    ids are int32: code that builds `one_hot` or indexes with them keeps working after
    `.long()`.
References
    catalog/moe/npu_moe_gating_top_k_softmax.toml; reference_chains.md
    (framework_moe_parallel gate table); pitfalls.md (no renormalisation).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "moe.gating_softmax_topk",
    "title": "topk(softmax(router_logits), k) -> npu_moe_gating_top_k_softmax (renorm stays in torch)",
    "module": "moe_gate",
    "apis": ["npu_moe_gating_top_k_softmax"],
    "stages": ["prefill", "decode"],
    "when": "moe",
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_moe_gating_top_k_softmax:*"],
    "facts": {"scoring_func": "softmax", "has_correction_bias": False},
    "hints": {"class_names": ["MixtralSparseMoeBlock", "Qwen2MoeSparseMoeBlock", "Qwen3MoeSparseMoeBlock"]},
    "inputs": {
        "router_logits": {"shape": ["T", "E"], "dtype": "act"},
        "top_k": {"dtype": "param", "value": 4},
    },
    "sizes": {"T": 16, "E": 256},
    "dtypes": ["float32", "bfloat16"],
    "near_misses": [
        {"file": "fixtures/gating_softmax_topk_nomatch_sigmoid.py",
         "reason": "the router scores with sigmoid, not softmax: npu_moe_gating_top_k_softmax would change the weights (see moe.gating_group_topk)"},
        {"file": "fixtures/gating_softmax_topk_nomatch_bias.py",
         "reason": "a correction bias is added between the softmax and the top-k: the operator has no bias input"},
        {"file": "fixtures/gating_softmax_topk_nomatch_topk_first.py",
         "reason": "top-k is taken on the raw logits and the softmax runs over the k kept values only (GPT-OSS order): not a softmax over all experts"},
    ],
    "match": {
        "lookalikes": {"lookalike_biased_choice": {
            "near_miss": "fixtures/gating_softmax_topk_nomatch_bias.py",
            "inputs": {"correction_bias": {"shape": ["E"], "dtype": "float32", "init": "uniform", "low": 0.0, "high": 0.5}}}},
        "explain": [
            {"when": "expected softmax(...), found sigmoid(", "near_miss": "fixtures/gating_softmax_topk_nomatch_sigmoid.py"},
            {"when": "expected softmax(...), found input", "near_miss": "fixtures/gating_softmax_topk_nomatch_topk_first.py"},
        ],
    },
    "doc_zh": """softmax路由后接top-k，替换为npu_moe_gating_top_k_softmax。

功能
    识别topk(softmax(router_logits, dim=-1), k)，其输出为路由权重和所选专家编号（Mixtral、
    Qwen2-MoE、Qwen3-MoE的路由器）。建议改为一次
    torch_npu.npu_moe_gating_top_k_softmax(router_logits.float(), None, k=k)调用，之后的
    部分（可选的norm_topk_prob除法、转回激活数据类型）仍留在torch中。sorted=False的top-k
    （DeepSeek-V2的greedy路由）选出的是同样的k对，torch不保证其顺序；算子按降序返回。
原因
    对全部专家的softmax、top-k选择和索引整理由三个内核合为一个，专家编号直接为int32，
    正是npu_moe_init_routing_v2和分发算子所需。路由器在每个MoE层对每个token都会执行，
    预填充和解码都受益。
示例
    probs = F.softmax(router_logits, dim=1, dtype=torch.float)
    weights, experts = torch.topk(probs, self.top_k, dim=-1)
替代写法
    weights, experts, _ = torch_npu.npu_moe_gating_top_k_softmax(router_logits.float(), None, k=self.top_k)
    experts = experts.long()   # 仅当后续torch代码用它做索引时
修复安全性
    安全。算子不做重新归一化：top-k之后的norm_topk_prob除法保持原位，放在调用之后。仅适用于
    用softmax打分、不加选择偏置、不分组选专家的路由器；sigmoid或带偏置修正的路由器
    （DeepSeek）对应moe.gating_group_topk，绝不能用本规则。编号为int32：用它构造one_hot或
    做索引的代码在.long()之后照常工作。
参考
    catalog/moe/npu_moe_gating_top_k_softmax.toml；reference_chains.md
    （framework_moe_parallel门控表）；pitfalls.md（不做重新归一化）。
""",
}


def search(router_logits, top_k):
    probs = F.softmax(router_logits, dim=-1, dtype=torch.float)
    weights, experts = torch.topk(probs, top_k, dim=-1)
    return weights, experts


def search_dim1(router_logits, top_k):
    # HF routers flatten the tokens first and name the expert axis 1.
    probs = F.softmax(router_logits, dim=1, dtype=torch.float)
    weights, experts = torch.topk(probs, top_k, dim=-1)
    return weights, experts


def search_method(router_logits, top_k):
    probs = router_logits.float().softmax(dim=-1)
    weights, experts = probs.topk(top_k, dim=-1)
    return weights, experts


def search_unsorted(router_logits, top_k):
    # the picks left unsorted (DeepSeek-V2's greedy router): the same k pairs; CPU top-k
    # returns them in descending order when k * 64 <= E, as the sizes here make it
    probs = router_logits.softmax(dim=-1, dtype=torch.float32)
    weights, experts = torch.topk(probs, k=top_k, dim=-1, sorted=False)
    return weights, experts


def lookalike_biased_choice(router_logits, top_k, correction_bias=None):
    # the experts are chosen on softmax + bias, the weights read from the plain softmax
    probs = router_logits.float().softmax(dim=-1)
    experts = torch.topk(probs + correction_bias, top_k, dim=-1)[1]
    return probs.gather(1, experts), experts


def replace(router_logits, top_k):
    weights, experts, _ = torch_npu.npu_moe_gating_top_k_softmax(router_logits.float(), None, k=top_k)
    return weights, experts.long()


def naive_sigmoid_router(router_logits, top_k):
    # Scoring a softmax router with a sigmoid gate: same ids, different weights.
    weights, experts, _ = torch_npu.npu_moe_gating_top_k(router_logits.float(), top_k, norm_type=1)
    return weights, experts.long()
