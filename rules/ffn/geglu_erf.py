"""Exact (erf) GeGLU on a merged gate_up tensor becomes `npu_gelu_mul(approximate='none')`.

What it does
    Finds `gelu(gate) * up` with the exact erf GELU (`F.gelu(x)`, `nn.GELU()`,
    ACT2FN["gelu"]) where gate is the first and up the second half of one merged
    projection (`chunk(2, dim=-1)` or slices): ModernBERT's and some encoders'
    gated FFNs. It proposes `torch_npu.npu_gelu_mul(gate_up, approximate="none")`.
Why
    GELU, the multiply and the intermediate become one kernel.
Example
    input, gate = self.Wi(x).chunk(2, dim=-1)
    return self.Wo(self.act(input) * gate)
Use instead
    return self.Wo(torch_npu.npu_gelu_mul(self.Wi(x), approximate="none"))
Fix safety
    Safe within the operator's limits, which the checks enforce: the last axis (gate
    and up together) at most 1024, i.e. at most 512 intermediate channels per rank,
    and at most 200000 rows. Most GeGLU layers are wider, so on them the candidate is
    reported as not applicable with that constraint. The tanh approximation is
    ffn.geglu (approximate="tanh"); the two are different functions and are never
    exchanged.
References
    catalog/ffn/npu_gelu_mul.toml; rules/ffn/geglu.py.
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "ffn.geglu_erf",
    "title": "erf gelu(gate) * up on a merged gate_up tensor -> npu_gelu_mul(approximate='none') (last axis <= 1024)",
    "module": "ffn",
    "apis": ["npu_gelu_mul"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_gelu_mul:*"],
    "facts": {"activation": "gelu", "ffn_gated": True, "glu_order": "gate_first", "glu_clamped": False},
    "inputs": {"gate_up": {"shape": ["T", "2 * I"], "dtype": "act", "scale": 3.0}},
    "sizes": {"T": 6, "I": 256},
    "dtypes": ["float32", "bfloat16"],
    "match": {"explain": [{"when": "argument approximate", "near_miss": "fixtures/geglu_erf_nomatch_tanh.py"}]},
    "near_misses": [
        {"file": "fixtures/geglu_erf_nomatch_tanh.py",
         "reason": "the GELU is the tanh approximation: npu_gelu_mul's 'none' mode would change the numbers (see ffn.geglu)"},
    ],
    "doc_zh": """合并gate_up张量上的精确（erf）GeGLU替换为npu_gelu_mul(approximate='none')。

功能
    识别使用精确erf GELU（F.gelu(x)、nn.GELU()、ACT2FN["gelu"]）的gelu(gate) * up，其中gate为
    同一合并投影的前一半、up为后一半（chunk(2, dim=-1)或切片）：ModernBERT及部分编码器的门控FFN。
    建议改为torch_npu.npu_gelu_mul(gate_up, approximate="none")。
原因
    GELU、乘法与中间结果合并为一个内核。
示例
    input, gate = self.Wi(x).chunk(2, dim=-1)
    return self.Wo(self.act(input) * gate)
替代写法
    return self.Wo(torch_npu.npu_gelu_mul(self.Wi(x), approximate="none"))
修复安全性
    在算子限制内安全，由检查项保证：最后一维（gate与up合计）不超过1024，即每卡中间维度不超过
    512，行数不超过200000。多数GeGLU层更宽，此时候选项报告为不适用并给出该约束。tanh近似见
    ffn.geglu（approximate="tanh"）；两者是不同的函数，绝不互换。
参考
    catalog/ffn/npu_gelu_mul.toml；rules/ffn/geglu.py。
""",
}


def search(gate_up):
    gate, up = gate_up.chunk(2, dim=-1)
    return F.gelu(gate) * up


def search_slices(gate_up):
    d = gate_up.shape[-1] // 2
    return F.gelu(gate_up[..., :d]) * gate_up[..., d:]


def replace(gate_up):
    return torch_npu.npu_gelu_mul(gate_up, approximate="none")


def naive_tanh_mode(gate_up):
    return torch_npu.npu_gelu_mul(gate_up, approximate="tanh")
