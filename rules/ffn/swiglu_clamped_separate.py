"""SwiGLU with a clamped gate and up on separate projections (`silu(gate.clamp(max=L)) * up.clamp(-L, L)`) becomes, after merging the projections, `npu_clipped_swiglu(alpha=1.0, bias=0.0, interleaved=False)`.

What it does
    Finds the clamped SwiGLU of DeepSeek-V4-style MLPs whose gate and up are two
    linears: `gate = gate_proj(x).clamp(max=limit)`,
    `up = up_proj(x).clamp(min=-limit, max=limit)`, `silu(gate) * up`. It proposes
    `torch_npu.npu_clipped_swiglu(gate_up, alpha=1.0, limit=limit, bias=0.0,
    interleaved=False)` on the output of a merged projection, gate first, then up.
Why
    Two clamps, silu and the product are four element-wise kernels over the widest
    activation of the layer, after two GEMMs; the fused kernel does the element-wise
    part in one pass and the merged projection is one GEMM. The operator's formula
    with alpha = 1 is silu of the clamped gate (A * sigmoid(1 * A)) and with bias = 0
    the clamped up unchanged, so the chain is the documented computation.
Example
    gate = self.gate_proj(x).clamp(max=self.limit)
    up = self.up_proj(x).clamp(min=-self.limit, max=self.limit)
    return self.down_proj(F.silu(gate) * up)
Use instead
    # self.gate_up_proj: the gate weight rows stacked before the up rows (biases too)
    h = torch_npu.npu_clipped_swiglu(self.gate_up_proj(x), alpha=1.0, limit=self.limit,
                                     bias=0.0, interleaved=False)
    return self.down_proj(h)
Fix safety
    Needs prerequisites: the two projections are merged into one (weights and biases
    stacked, gate first) when the checkpoint is loaded. alpha=1.0 and bias=0.0 must be
    passed: the operator's defaults (1.702, 1.0) are GPT-OSS's and would change every
    value. A gate clamped from below as well is not this operator (it clamps the gate
    only from above) and does not match. npu_swiglu has no clamp and is refused.
References
    catalog/ffn/npu_clipped_swiglu.toml; rules/ffn/swiglu_clamped_reject.py.
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "ffn.swiglu_clamped_separate",
    "title": "silu(gate.clamp(max=L)) * up.clamp(-L, L) on separate projections -> merge + npu_clipped_swiglu(alpha=1, bias=0)",
    "module": "ffn",
    "apis": ["npu_clipped_swiglu"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "merge_gate_up",
         "en": "Merge gate_proj and up_proj into one gate_up projection (weights and biases stacked, gate first) at load time.",
         "zh": "加载时把gate_proj与up_proj合并为一个gate_up投影（权重和偏置堆叠，gate在前）。",
         "mechanical": False},
    ],
    "checks": ["npu_clipped_swiglu:*"],
    "facts": {"activation": "silu", "ffn_gated": True, "glu_order": "gate_first", "glu_clamped": True},
    "rejects": [
        {"api": "npu_swiglu",
         "en": "npu_swiglu computes silu(gate) * up without the clamps; every value beyond the limit would change.",
         "zh": "npu_swiglu计算不带截断的silu(gate) * up；超出门限的值都会改变。",
         "needs": "npu_clipped_swiglu(alpha=1.0, limit, bias=0.0, interleaved=False) on the merged projection"},
    ],
    "inputs": {
        "gate": {"shape": ["T", "I"], "dtype": "act", "scale": 4.0},
        "up": {"shape": ["T", "I"], "dtype": "act", "scale": 4.0},
        "limit": {"dtype": "param", "value": 3.0},
    },
    "sizes": {"T": 6, "I": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"only_from": {"gate": ["linear"], "up": ["linear"]},
              "lookalikes": {"lookalike_gate_clamped_both_sides": "fixtures/swiglu_clamped_separate_nomatch_gate_both_sides.py"}},
    "near_misses": [
        {"file": "fixtures/swiglu_clamped_separate_nomatch_gate_both_sides.py",
         "reason": "the gate is clamped from below as well: npu_clipped_swiglu clamps the gate only from above, so no documented operator computes this"},
    ],
    "doc_zh": """gate与up投影分开、gate与up被截断的SwiGLU（silu(gate.clamp(max=L)) * up.clamp(-L, L)），在合并投影后替换为npu_clipped_swiglu(alpha=1.0, bias=0.0, interleaved=False)。

功能
    识别DeepSeek-V4写法MLP中的截断SwiGLU，其gate与up是两个linear：
    gate = gate_proj(x).clamp(max=limit)，up = up_proj(x).clamp(min=-limit, max=limit)，
    silu(gate) * up。建议在合并后的投影输出（gate在前，up在后）上调用
    torch_npu.npu_clipped_swiglu(gate_up, alpha=1.0, limit=limit, bias=0.0, interleaved=False)。
原因
    两次clamp、silu与乘法在两个GEMM之后、在层内最宽的激活上是四个逐元素内核；融合内核一次完成
    逐元素部分，合并后的投影也只需一次GEMM。算子公式在alpha = 1时即截断后gate的silu
    （A * sigmoid(1 * A)），bias = 0时截断后的up不变，因此该计算链正是文档中的计算。
示例
    gate = self.gate_proj(x).clamp(max=self.limit)
    up = self.up_proj(x).clamp(min=-self.limit, max=self.limit)
    return self.down_proj(F.silu(gate) * up)
替代写法
    # self.gate_up_proj：gate权重行堆叠在up之前（偏置亦然）
    h = torch_npu.npu_clipped_swiglu(self.gate_up_proj(x), alpha=1.0, limit=self.limit,
                                     bias=0.0, interleaved=False)
    return self.down_proj(h)
修复安全性
    需要前置改造：加载检查点时把两个投影合并为一个（权重和偏置堆叠，gate在前）。必须显式传入
    alpha=1.0与bias=0.0：算子默认值（1.702、1.0）是GPT-OSS的取值，会改变每个结果。gate若还有
    下限截断则不是该算子的计算（它只对gate做上限截断），不在此匹配。npu_swiglu没有截断，予以拒绝。
参考
    catalog/ffn/npu_clipped_swiglu.toml；rules/ffn/swiglu_clamped_reject.py。
""",
}


def search(gate, up, limit):
    gate = gate.clamp(max=limit)
    up = up.clamp(min=-limit, max=limit)
    return F.silu(gate) * up


def search_sigmoid(gate, up, limit):
    g = torch.clamp(gate, max=limit)
    u = torch.clamp(up, -limit, limit)
    return g * torch.sigmoid(g) * u


def lookalike_gate_clamped_both_sides(gate, up, limit):
    # the gate clamped to [-limit, limit], where the operator clamps it only from above
    gate = gate.clamp(min=-limit, max=limit)
    up = up.clamp(min=-limit, max=limit)
    return F.silu(gate) * up


def replace(gate, up, limit):
    return torch_npu.npu_clipped_swiglu(torch.cat([gate, up], dim=-1), alpha=1.0, limit=limit, bias=0.0,
                                        interleaved=False)


def naive_gpt_oss_defaults(gate, up, limit):
    # the operator's defaults (alpha 1.702, bias 1.0) are GPT-OSS's, not this chain's
    return torch_npu.npu_clipped_swiglu(torch.cat([gate, up], dim=-1), limit=limit, interleaved=False)


def naive_plain_swiglu(gate, up, limit):
    return torch_npu.npu_swiglu(torch.cat([gate, up], dim=-1), dim=-1)
