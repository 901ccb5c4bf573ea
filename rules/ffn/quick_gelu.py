"""Quick GELU `x * sigmoid(1.702 * x)` becomes `npu_fast_gelu`.

What it does
    Finds `x * torch.sigmoid(1.702 * x)` (CLIP/SigLIP-style "quick_gelu" vision towers,
    some older LLMs). It proposes `torch_npu.npu_fast_gelu(x)`.
Why
    Three element-wise kernels become one on the MLP's widest tensor.
Example
    return x * torch.sigmoid(1.702 * x)
Use instead
    return torch_npu.npu_fast_gelu(x)
Fix safety
    Safe for exactly this function. npu_fast_gelu is NOT an approximation of erf or tanh
    GELU to be used for speed: applied to a GELU model it changes activations (the
    catalog's quick_gelu_only check). On A2/A3 bfloat16 is accepted; older products take
    float16/float32 only.
References
    catalog/ffn/npu_fast_gelu.toml.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "ffn.quick_gelu",
    "title": "x * sigmoid(1.702 x) -> npu_fast_gelu",
    "module": "ffn",
    "apis": ["npu_fast_gelu"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_fast_gelu:*"],
    "facts": {"activation": "quick_gelu"},
    "inputs": {"x": {"shape": ["T", "I"], "dtype": "act", "scale": 3.0}},
    "sizes": {"T": 6, "I": 128},
    "dtypes": ["float32", "bfloat16"],
    "match": {"explain": [{"when": "expected mul(...), found input", "near_miss": "fixtures/quick_gelu_nomatch_silu.py"}]},
    "near_misses": [
        {"file": "fixtures/quick_gelu_nomatch_silu.py",
         "reason": "x * sigmoid(x) without the 1.702 factor is SiLU, not quick GELU"},
    ],
    "doc_zh": """quick GELU x * sigmoid(1.702 * x)替换为npu_fast_gelu。

功能
    识别x * torch.sigmoid(1.702 * x)（CLIP/SigLIP风格的quick_gelu视觉塔及部分早期LLM）。
    建议改为torch_npu.npu_fast_gelu(x)。
原因
    MLP最宽张量上的三个逐元素内核合并为一个。
示例
    return x * torch.sigmoid(1.702 * x)
替代写法
    return torch_npu.npu_fast_gelu(x)
修复安全性
    仅对这一函数安全。npu_fast_gelu不是为提速而可替代erf或tanh GELU的近似：用于GELU模型会
    改变激活（目录中的quick_gelu_only检查）。A2/A3支持bfloat16；较早的产品只支持
    float16/float32。
参考
    catalog/ffn/npu_fast_gelu.toml。
""",
}


def search(x):
    return x * torch.sigmoid(1.702 * x)


def search_scaled_first(x):
    return torch.sigmoid(x * 1.702) * x


def replace(x):
    return torch_npu.npu_fast_gelu(x)


def naive_erf_gelu(x):
    return torch_npu.npu_gelu(x, approximate="none")
