"""GeGLU on a merged gate_up tensor becomes `npu_gelu_mul`.

What it does
    Finds `gelu(gate) * up` where gate is the first and up the second half of one
    merged projection (`chunk(2, dim=-1)`), with erf or tanh GELU. It proposes
    `torch_npu.npu_gelu_mul(gate_up, approximate=...)`.
Why
    GELU, the multiply and the intermediate become one kernel (Gemma-style and T5 v1.1
    gated FFNs, some vision towers).
Example
    gate, up = self.wi(x).chunk(2, dim=-1)
    return self.wo(F.gelu(gate, approximate='tanh') * up)
Use instead
    return self.wo(torch_npu.npu_gelu_mul(self.wi(x), approximate='tanh'))
Fix safety
    Safe within the operator's limits, which the checks enforce: the last axis (gate and
    up together) at most 1024, i.e. at most 512 intermediate channels per rank, and at
    most 200000 rows. Most LLM GeGLU layers are wider, so on them the candidate is
    reported as not applicable with that constraint. Separate gate/up projections need
    the same merge as ffn.swiglu, gate first.
References
    catalog/ffn/npu_gelu_mul.toml.
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "ffn.geglu",
    "title": "gelu(gate) * up on a merged gate_up tensor -> npu_gelu_mul (last axis <= 1024)",
    "module": "ffn",
    "apis": ["npu_gelu_mul"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_gelu_mul:*"],
    "facts": {"activation": "gelu_tanh", "ffn_gated": True, "glu_order": "gate_first", "glu_clamped": False},
    "inputs": {"gate_up": {"shape": ["T", "2 * I"], "dtype": "act"}},
    "sizes": {"T": 6, "I": 256},
    "dtypes": ["float32", "bfloat16"],
    "match": {"explain": [{"when": "expected output 0 of unpack(", "near_miss": "fixtures/geglu_nomatch_up_first.py"}]},
    "near_misses": [
        {"file": "fixtures/geglu_nomatch_up_first.py",
         "reason": "GELU is applied to the second half: npu_gelu_mul applies it to the first"},
    ],
    "doc_zh": """合并gate_up张量上的GeGLU替换为npu_gelu_mul。

功能
    识别gelu(gate) * up，其中gate为同一合并投影的前一半、up为后一半（chunk(2, dim=-1)），
    GELU可为erf或tanh形式。建议改为torch_npu.npu_gelu_mul(gate_up, approximate=...)。
原因
    GELU、乘法与中间结果合并为一个内核（Gemma风格与T5 v1.1的门控FFN、部分视觉塔）。
示例
    gate, up = self.wi(x).chunk(2, dim=-1)
    return self.wo(F.gelu(gate, approximate='tanh') * up)
替代写法
    return self.wo(torch_npu.npu_gelu_mul(self.wi(x), approximate='tanh'))
修复安全性
    在算子限制内安全，由检查项保证：最后一维（gate与up合计）不超过1024，即每卡中间维度不超过
    512，行数不超过200000。多数LLM的GeGLU层更宽，此时候选项报告为不适用并给出该约束。gate/up
    分离的投影需要与ffn.swiglu相同的合并（gate在前）。
参考
    catalog/ffn/npu_gelu_mul.toml。
""",
}


def search(gate_up):
    gate, up = gate_up.chunk(2, dim=-1)
    return F.gelu(gate, approximate="tanh") * up


def search_slices(gate_up):
    d = gate_up.shape[-1] // 2
    return F.gelu(gate_up[..., :d], approximate="tanh") * gate_up[..., d:]


def replace(gate_up):
    return torch_npu.npu_gelu_mul(gate_up, approximate="tanh")


def naive_erf_mode(gate_up):
    return torch_npu.npu_gelu_mul(gate_up, approximate="none")
