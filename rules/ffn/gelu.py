"""Hand-written erf GELU becomes `npu_gelu(approximate='none')`.

What it does
    Finds the exact (erf) GELU spelled out: `0.5 * x * (1 + erf(x / sqrt(2)))`, with the
    constant written as `math.sqrt(2.0)`, `1.41421...` or multiplied by `0.70710...`. It
    proposes `torch_npu.npu_gelu(x, approximate='none')`.
Why
    Five element-wise kernels (divide, erf, add, two multiplies) over the FFN's widest
    tensor become one.
Example
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))
Use instead
    return torch_npu.npu_gelu(x, approximate='none')
Fix safety
    Safe. `F.gelu(x)` and `nn.GELU()` already run as one kernel and are not reported. The
    tanh approximation is ffn.gelu_tanh; `x * sigmoid(1.702 * x)` is ffn.quick_gelu:
    the three are different functions and are never exchanged.
References
    catalog/ffn/npu_gelu.toml.
"""
import math

import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "ffn.gelu",
    "title": "hand-written erf GELU -> npu_gelu(approximate='none')",
    "module": "ffn",
    "apis": ["npu_gelu"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_gelu:*"],
    "facts": {"activation": "gelu"},
    "inputs": {"x": {"shape": ["T", "I"], "dtype": "act", "scale": 3.0}},
    "sizes": {"T": 6, "I": 128},
    "dtypes": ["float32", "bfloat16"],
    "match": {"explain": [{"when": "found tanh(", "near_miss": "fixtures/gelu_nomatch_tanh.py"}]},
    "near_misses": [
        {"file": "fixtures/gelu_nomatch_tanh.py",
         "reason": "tanh approximation, not erf: a different function (see ffn.gelu_tanh)"},
    ],
    "doc_zh": """手写的erf形式GELU替换为npu_gelu(approximate='none')。

功能
    识别展开写的精确（erf）GELU：0.5 * x * (1 + erf(x / sqrt(2)))，常数可写作math.sqrt(2.0)、
    1.41421...或乘以0.70710...。建议改为torch_npu.npu_gelu(x, approximate='none')。
原因
    FFN最宽张量上的五个逐元素内核（除法、erf、加法、两次乘法）合并为一个。
示例
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))
替代写法
    return torch_npu.npu_gelu(x, approximate='none')
修复安全性
    安全。F.gelu(x)与nn.GELU()已是单个内核，不报告。tanh近似见ffn.gelu_tanh；
    x * sigmoid(1.702 * x)见ffn.quick_gelu：三者是不同的函数，绝不互换。
参考
    catalog/ffn/npu_gelu.toml。
""",
}


def search(x):
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def search_reciprocal_constant(x):
    return 0.5 * x * (1.0 + torch.erf(x * 0.7071067811865476))


def replace(x):
    return torch_npu.npu_gelu(x, approximate="none")


def naive_fast_gelu(x):
    return torch_npu.npu_fast_gelu(x)
