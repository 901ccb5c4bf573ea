"""SwiGLU on an already merged gate_up projection becomes `npu_swiglu`.

What it does
    Finds `gate, up = gate_up_proj(x).chunk(2, dim=-1)` (or the two halves taken by
    slicing) followed by `silu(gate) * up`, with the gate half first. It proposes
    `torch_npu.npu_swiglu(gate_up, dim=-1)`.
Why
    silu, the multiply and the intermediates become one kernel on the MLP's widest
    tensor; the merged GEMM is already in place (Phi-3, vLLM-style MLPs, MoE experts).
Example
    gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
    return self.down_proj(F.silu(gate) * up)
Use instead
    return self.down_proj(torch_npu.npu_swiglu(self.gate_up_proj(x), dim=-1))
Fix safety
    Safe when the gate half comes first. When the code takes `up, gate = ...chunk(2)`
    (up first) or splits even/odd columns, the rule does not match (the weight rows would
    have to be reordered first). Only for plain SiLU gating with no clamp or offset.
References
    catalog/ffn/npu_swiglu.toml; pitfalls.md 3.4.
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "ffn.swiglu_merged",
    "title": "silu(gate) * up on a merged gate_up tensor (gate first) -> npu_swiglu",
    "module": "ffn",
    "apis": ["npu_swiglu"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_swiglu:*"],
    "facts": {"activation": "silu", "ffn_gated": True, "glu_order": "gate_first", "glu_clamped": False},
    "inputs": {
        "gate_up": {"shape": ["T", "2 * I"], "dtype": "act"},
    },
    "sizes": {"T": 6, "I": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"explain": [{"when": "expected a size computed like floor_divide(...), found constant", "near_miss": "fixtures/swiglu_merged_nomatch_even_odd.py"},
                          {"when": "expected output 0 of unpack(", "near_miss": "fixtures/swiglu_merged_nomatch_up_first.py"}]},
    "near_misses": [
        {"file": "fixtures/swiglu_merged_nomatch_up_first.py",
         "reason": "the first half is used as up and the second as gate: npu_swiglu applies silu to the first half"},
        {"file": "fixtures/swiglu_merged_nomatch_even_odd.py",
         "reason": "gate and up are interleaved columns (x[..., ::2], x[..., 1::2]), not halves"},
    ],
    "doc_zh": """在已合并的gate_up投影上的SwiGLU替换为npu_swiglu。

功能
    识别gate, up = gate_up_proj(x).chunk(2, dim=-1)（或用切片取两半）之后的silu(gate) * up，
    且gate在前。建议改为torch_npu.npu_swiglu(gate_up, dim=-1)。
原因
    silu、乘法及中间结果在MLP最宽的张量上合并为一个内核；合并GEMM已经存在（Phi-3、vLLM风格
    MLP、MoE专家）。
示例
    gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
    return self.down_proj(F.silu(gate) * up)
替代写法
    return self.down_proj(torch_npu.npu_swiglu(self.gate_up_proj(x), dim=-1))
修复安全性
    gate在前时安全。若代码写作up, gate = ...chunk(2)（up在前）或按奇偶列拆分，规则不匹配
    （需先重排权重行）。仅适用于无clamp、无偏移的普通SiLU门控。
参考
    catalog/ffn/npu_swiglu.toml；pitfalls.md 3.4。
""",
}


def search(gate_up):
    gate, up = gate_up.chunk(2, dim=-1)
    return F.silu(gate) * up


def search_slices(gate_up):
    d = gate_up.shape[-1] // 2
    return F.silu(gate_up[..., :d]) * gate_up[..., d:]


def search_split(gate_up):
    gate, up = torch.split(gate_up, gate_up.shape[-1] // 2, dim=-1)
    return gate * torch.sigmoid(gate) * up


def search_chunk_indexed(gate_up):
    halves = gate_up.chunk(2, dim=-1)
    return F.silu(halves[0]) * halves[1]


def replace(gate_up):
    return torch_npu.npu_swiglu(gate_up, dim=-1)
