"""Clamped, offset SwiGLU (GPT-OSS) must not become `npu_swiglu`; `npu_clipped_swiglu` fits.

What it does
    Finds the GPT-OSS gated activation: gate and up taken as even/odd columns of the
    merged projection, `gate.clamp(max=limit)`, `up.clamp(-limit, limit)`,
    `glu = gate * sigmoid(alpha * gate)`, output `(up + 1) * glu`. It refuses
    `npu_swiglu` (plain `silu(a) * b`) and proposes
    `torch_npu.npu_clipped_swiglu(gate_up, alpha=alpha, limit=limit, bias=1.0,
    interleaved=True)`.
Why
    npu_swiglu computes `silu(gate) * up`: no clamp, a sigmoid without alpha, no +1 on
    up, halves instead of even/odd columns. Mapping this chain to it changes every
    activation silently (pitfalls 3.3). npu_clipped_swiglu implements exactly the GPT-OSS
    formula in one kernel.
Example
    g = gate_up[..., ::2].clamp(max=limit)
    u = gate_up[..., 1::2].clamp(-limit, limit)
    return (u + 1) * g * torch.sigmoid(alpha * g)
Use instead
    return torch_npu.npu_clipped_swiglu(gate_up, alpha=alpha, limit=limit,
                                        bias=1.0, interleaved=True)
Fix safety
    Safe with npu_clipped_swiglu under its checks (A2/A3, even split axis, contiguous
    input). The expert GPT-OSS port on cann-recipes keeps this activation in torch; the
    quantised MoE path may use npu_dequant_swiglu_quant with swiglu_mode=1 instead
    (quant rules). Never npu_swiglu.
References
    catalog/ffn/npu_clipped_swiglu.toml, catalog/ffn/npu_swiglu.toml (not_clamped_variant);
    pitfalls.md 3.3.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "ffn.swiglu_clamped_reject",
    "title": "GPT-OSS clamped SwiGLU (alpha, limit, up + 1): not npu_swiglu; npu_clipped_swiglu",
    "module": "ffn",
    "apis": ["npu_clipped_swiglu"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_clipped_swiglu:*"],
    "facts": {"activation": "silu", "ffn_gated": True, "glu_order": "interleaved", "glu_clamped": True},
    "rejects": [
        {"api": "npu_swiglu",
         "en": "npu_swiglu computes silu(first half) * second half: no clamp, no alpha, no +1 on up, halves instead of even/odd columns; every activation would change silently.",
         "zh": "npu_swiglu计算silu(前半) * 后半：没有clamp、没有alpha、up没有+1，且按两半而非奇偶列拆分；每个激活值都会被静默改变。",
         "needs": "npu_clipped_swiglu(alpha, limit, bias=1.0, interleaved=True), or npu_dequant_swiglu_quant(swiglu_mode=1) on the quantised path"},
    ],
    "hints": {"class_names": ["GptOssExperts", "GptOssMLP"]},
    "inputs": {
        "gate_up": {"shape": ["T", "2 * I"], "dtype": "act", "scale": 4.0},
        "alpha": {"dtype": "param", "value": 1.702},
        "limit": {"dtype": "param", "value": 7.0},
    },
    "sizes": {"T": 6, "I": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"lookalikes": {"lookalike_plain_silu": "fixtures/swiglu_clamped_reject_nomatch_plain_silu.py",
                             "lookalike_plain_silu_fn": "fixtures/swiglu_clamped_reject_nomatch_plain_silu.py"}},
    "near_misses": [
        {"file": "fixtures/swiglu_clamped_reject_nomatch_plain_silu.py",
         "reason": "no clamp and no offset: plain SwiGLU (see ffn.swiglu_merged)"},
    ],
    "doc_zh": """带clamp和偏移的SwiGLU（GPT-OSS）不能替换为npu_swiglu；可用npu_clipped_swiglu。

功能
    识别GPT-OSS的门控激活：gate与up取合并投影的奇偶列，gate.clamp(max=limit)，
    up.clamp(-limit, limit)，glu = gate * sigmoid(alpha * gate)，输出(up + 1) * glu。拒绝
    npu_swiglu（普通silu(a) * b），建议torch_npu.npu_clipped_swiglu(gate_up, alpha=alpha,
    limit=limit, bias=1.0, interleaved=True)。
原因
    npu_swiglu计算silu(gate) * up：没有clamp、sigmoid没有alpha、up没有+1、按两半而非奇偶列拆分。
    把该计算链映射过去会静默改变每个激活（pitfalls 3.3）。npu_clipped_swiglu用一个内核精确实现
    GPT-OSS公式。
示例
    g = gate_up[..., ::2].clamp(max=limit)
    u = gate_up[..., 1::2].clamp(-limit, limit)
    return (u + 1) * g * torch.sigmoid(alpha * g)
替代写法
    return torch_npu.npu_clipped_swiglu(gate_up, alpha=alpha, limit=limit,
                                        bias=1.0, interleaved=True)
修复安全性
    在npu_clipped_swiglu的检查条件下安全（A2/A3，拆分轴为偶数，输入连续）。cann-recipes上的
    专家GPT-OSS移植把该激活留在torch中；量化MoE路径可改用swiglu_mode=1的
    npu_dequant_swiglu_quant（见quant规则）。绝不能用npu_swiglu。
参考
    catalog/ffn/npu_clipped_swiglu.toml、catalog/ffn/npu_swiglu.toml（not_clamped_variant）；
    pitfalls.md 3.3。
""",
}


def search(gate_up, alpha, limit):
    g = gate_up[..., ::2].clamp(min=None, max=limit)
    u = gate_up[..., 1::2].clamp(min=-limit, max=limit)
    return (u + 1) * (g * torch.sigmoid(g * alpha))


def search_torch_clamp(gate_up, alpha, limit):
    gate = torch.clamp(gate_up[..., 0::2], max=limit)
    up = torch.clamp(gate_up[..., 1::2], -limit, limit)
    return gate * torch.sigmoid(alpha * gate) * (up + 1.0)


def lookalike_plain_silu(gate_up, alpha, limit):
    # SwiGLU on the merged projection: no clamp, no alpha, no offset
    gate, up = gate_up.chunk(2, dim=-1)
    return gate * torch.sigmoid(gate) * up


def lookalike_plain_silu_fn(gate_up, alpha, limit):
    gate, up = gate_up.chunk(2, dim=-1)
    return torch.nn.functional.silu(gate) * up


def replace(gate_up, alpha, limit):
    return torch_npu.npu_clipped_swiglu(gate_up, alpha=alpha, limit=limit, bias=1.0,
                                        interleaved=True)


def naive_plain_swiglu(gate_up, alpha, limit):
    return torch_npu.npu_swiglu(gate_up, dim=-1)


def naive_swiglu_on_deinterleaved(gate_up, alpha, limit):
    # Even a correct de-interleave does not help: clamp, alpha and +1 are still missing.
    return torch_npu.npu_swiglu(torch.cat([gate_up[..., ::2], gate_up[..., 1::2]], dim=-1), dim=-1)
