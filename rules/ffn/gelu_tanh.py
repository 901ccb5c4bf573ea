"""Hand-written tanh-approximate GELU ("gelu_new", "gelu_pytorch_tanh") becomes `npu_gelu(approximate='tanh')`.

What it does
    Finds `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))` in its common
    spellings (`pow(x, 3)`, `x * x * x`, the constant 0.7978845608...). It proposes
    `torch_npu.npu_gelu(x, approximate='tanh')`.
Why
    About eight element-wise kernels over the FFN's widest tensor become one (GPT-2,
    Gemma, Phi MLPs).
Example
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))
Use instead
    return torch_npu.npu_gelu(x, approximate='tanh')
Fix safety
    Safe. Never map it to npu_fast_gelu (that is x * sigmoid(1.702 x), ffn.quick_gelu) or
    to the erf form: the functions differ by up to about 1e-3 absolute, which a numeric
    check would catch and a model may notice.
References
    catalog/ffn/npu_gelu.toml, catalog/ffn/npu_fast_gelu.toml (quick_gelu_only).
"""
import math

import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "ffn.gelu_tanh",
    "title": "hand-written tanh GELU -> npu_gelu(approximate='tanh')",
    "module": "ffn",
    "apis": ["npu_gelu"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_gelu:*"],
    "facts": {"activation": "gelu_tanh"},
    "rejects": [
        {"api": "npu_fast_gelu",
         "en": "npu_fast_gelu is x * sigmoid(1.702 x) (quick GELU), a different function from the tanh approximation.",
         "zh": "npu_fast_gelu是x * sigmoid(1.702 x)（quick GELU），与tanh近似是不同的函数。",
         "needs": "npu_gelu(approximate='tanh')"},
    ],
    "inputs": {"x": {"shape": ["T", "I"], "dtype": "act", "scale": 3.0}},
    "sizes": {"T": 6, "I": 128},
    "dtypes": ["float32", "bfloat16"],
    "match": {"lookalikes": {"lookalike_quick_gelu": "fixtures/gelu_tanh_nomatch_quick_gelu.py"}},
    "near_misses": [
        {"file": "fixtures/gelu_tanh_nomatch_quick_gelu.py",
         "reason": "x * sigmoid(1.702 * x) is quick GELU, not the tanh approximation (see ffn.quick_gelu)"},
    ],
    "doc_zh": """手写的tanh近似GELU（"gelu_new"、"gelu_pytorch_tanh"）替换为npu_gelu(approximate='tanh')。

功能
    识别0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))的常见写法（pow(x, 3)、
    x * x * x、常数0.7978845608...）。建议改为torch_npu.npu_gelu(x, approximate='tanh')。
原因
    FFN最宽张量上约八个逐元素内核合并为一个（GPT-2、Gemma、Phi的MLP）。
示例
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))
替代写法
    return torch_npu.npu_gelu(x, approximate='tanh')
修复安全性
    安全。绝不能映射到npu_fast_gelu（即x * sigmoid(1.702 x)，见ffn.quick_gelu）或erf形式：
    两者绝对误差可达约1e-3，数值检查能发现，模型也可能受影响。
参考
    catalog/ffn/npu_gelu.toml、catalog/ffn/npu_fast_gelu.toml（quick_gelu_only）。
""",
}


def search(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


def search_cube_product(x):
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + torch.tanh(inner))


def search_factored(x):
    # x * (1 + 0.044715 * x * x) for x + 0.044715 * x**3, the constant to eight places (Megatron, BLOOM)
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


def lookalike_quick_gelu(x):
    # the sigmoid approximation of GELU
    return x * torch.sigmoid(1.702 * x)


def replace(x):
    return torch_npu.npu_gelu(x, approximate="tanh")


def naive_fast_gelu(x):
    return torch_npu.npu_fast_gelu(x)
