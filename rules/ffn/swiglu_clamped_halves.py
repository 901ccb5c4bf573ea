"""Clamped, offset SwiGLU on the front and back halves of a merged projection becomes `npu_clipped_swiglu(interleaved=False)`.

What it does
    Finds the GPT-OSS gated activation written on halves instead of even/odd
    columns: `gate, up = gate_up.chunk(2, dim=-1)`, `gate.clamp(max=limit)`,
    `up.clamp(-limit, limit)`, `glu = gate * sigmoid(gate * alpha)`, output
    `(up + 1) * glu` (MiniMax-M3's dense MLP and shared expert). It proposes
    `torch_npu.npu_clipped_swiglu(gate_up, alpha=alpha, limit=limit, bias=1.0,
    interleaved=False)` and refuses `npu_swiglu`.
Why
    Two clamps, the scaled sigmoid, two multiplies and the offset are five or six
    element-wise kernels over the widest activation of the layer; the fused kernel
    does them in one pass. npu_swiglu has no clamp, no alpha and no offset.
Example
    gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
    gate = gate.clamp(max=self.limit)
    up = up.clamp(min=-self.limit, max=self.limit)
    return self.down_proj((up + 1.0) * (gate * torch.sigmoid(gate * self.alpha)))
Use instead
    h = torch_npu.npu_clipped_swiglu(self.gate_up_proj(x), alpha=self.alpha,
                                     limit=self.limit, bias=1.0, interleaved=False)
    return self.down_proj(h)
Fix safety
    Safe under the operator's checks (A2/A3, even split axis, contiguous input: a
    linear's output is). The documented formula is exactly this chain with the gate
    as the front half when interleaved=False: A = x[:, :h] clamped from above,
    B = x[:, h:] clamped to [-limit, limit], A * sigmoid(alpha * A) * (B + bias).
    alpha and limit are passed as the model holds them. The even/odd split is
    ffn.swiglu_clamped_reject (interleaved=True).
References
    catalog/ffn/npu_clipped_swiglu.toml; rules/ffn/swiglu_clamped_reject.py.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "ffn.swiglu_clamped_halves",
    "title": "clamped, offset SwiGLU on chunk(2) halves -> npu_clipped_swiglu(interleaved=False)",
    "module": "ffn",
    "apis": ["npu_clipped_swiglu"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_clipped_swiglu:*"],
    "facts": {"activation": "silu", "ffn_gated": True, "glu_order": "gate_first", "glu_clamped": True},
    "rejects": [
        {"api": "npu_swiglu",
         "en": "npu_swiglu computes silu(first half) * second half: no clamp, no alpha, no +1 on up; every activation would change.",
         "zh": "npu_swiglu计算silu(前半) * 后半：没有clamp、没有alpha、up没有+1；每个激活值都会改变。",
         "needs": "npu_clipped_swiglu(alpha, limit, bias=1.0, interleaved=False)"},
    ],
    "inputs": {
        "gate_up": {"shape": ["T", "2 * I"], "dtype": "act", "scale": 4.0},
        "alpha": {"dtype": "param", "value": 1.702},
        "limit": {"dtype": "param", "value": 7.0},
    },
    "sizes": {"T": 6, "I": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"lookalikes": {"lookalike_interleaved": "fixtures/swiglu_clamped_halves_nomatch_interleaved.py"}},
    "near_misses": [
        {"file": "fixtures/swiglu_clamped_halves_nomatch_interleaved.py",
         "reason": "gate and up are the even and odd columns, not the two halves: npu_clipped_swiglu with interleaved=True (see ffn.swiglu_clamped_reject)"},
    ],
    "doc_zh": """合并投影按前后两半拆分的截断加偏置SwiGLU，替换为npu_clipped_swiglu(interleaved=False)。

功能
    识别按前后两半（而非奇偶列）书写的GPT-OSS门控激活：gate, up = gate_up.chunk(2, dim=-1)，
    gate.clamp(max=limit)，up.clamp(-limit, limit)，glu = gate * sigmoid(gate * alpha)，
    输出(up + 1) * glu（MiniMax-M3的稠密MLP与共享专家）。建议改为
    torch_npu.npu_clipped_swiglu(gate_up, alpha=alpha, limit=limit, bias=1.0,
    interleaved=False)，并拒绝npu_swiglu。
原因
    两次clamp、带系数的sigmoid、两次乘法和偏移，在层内最宽的激活上是五到六个逐元素内核；融合
    内核一次完成。npu_swiglu没有clamp、没有alpha，也没有偏移。
示例
    gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
    gate = gate.clamp(max=self.limit)
    up = up.clamp(min=-self.limit, max=self.limit)
    return self.down_proj((up + 1.0) * (gate * torch.sigmoid(gate * self.alpha)))
替代写法
    h = torch_npu.npu_clipped_swiglu(self.gate_up_proj(x), alpha=self.alpha,
                                     limit=self.limit, bias=1.0, interleaved=False)
    return self.down_proj(h)
修复安全性
    在算子检查条件下安全（A2/A3，拆分轴为偶数，输入连续：linear的输出即连续）。interleaved=False
    时文档公式与该计算链完全一致，gate为前一半：A = x[:, :h]仅上限截断，B = x[:, h:]截断到
    [-limit, limit]，A * sigmoid(alpha * A) * (B + bias)。alpha与limit按模型中的值传入。奇偶列
    拆分的写法见ffn.swiglu_clamped_reject（interleaved=True）。
参考
    catalog/ffn/npu_clipped_swiglu.toml；rules/ffn/swiglu_clamped_reject.py。
""",
}


def search(gate_up, alpha, limit):
    gate, up = gate_up.chunk(2, dim=-1)
    gate = gate.clamp(max=limit)
    up = up.clamp(min=-limit, max=limit)
    glu = gate * torch.sigmoid(gate * alpha)
    return (up + 1.0) * glu


def search_torch_clamp(gate_up, alpha, limit):
    gate, up = gate_up.chunk(2, dim=-1)
    gate = torch.clamp(gate, max=limit)
    up = torch.clamp(up, -limit, limit)
    return gate * torch.sigmoid(alpha * gate) * (up + 1)


def lookalike_interleaved(gate_up, alpha, limit):
    # GPT-OSS: gate and up are the even and odd columns
    gate = gate_up[..., ::2].clamp(max=limit)
    up = gate_up[..., 1::2].clamp(min=-limit, max=limit)
    return (up + 1.0) * (gate * torch.sigmoid(gate * alpha))


def replace(gate_up, alpha, limit):
    return torch_npu.npu_clipped_swiglu(gate_up, alpha=alpha, limit=limit, bias=1.0, interleaved=False)


def naive_interleaved(gate_up, alpha, limit):
    # the operator's default even/odd split takes other columns as the gate
    return torch_npu.npu_clipped_swiglu(gate_up, alpha=alpha, limit=limit, bias=1.0)


def naive_plain_swiglu(gate_up, alpha, limit):
    return torch_npu.npu_swiglu(gate_up, dim=-1)
