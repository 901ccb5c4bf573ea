"""Root-mean-square scaling becomes one fused norm call.

What it does
    Recognises x * rsqrt(mean(x^2) + eps) * w over the last axis.
Why
    Several elementwise kernels shrink to one; x is read once.
Example
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
Use instead
    y = torch_npu.npu_rms_norm(x, w, epsilon=eps)[0]
Fix safety
    Safe: the operator returns a pair, the first item is the output.
References
    catalog/norm/npu_rms_norm.toml
"""
import torch

try:
    import torch_npu
except ImportError:
    torch_npu = None

RULE = {
    "id": "norm.scaled_rms",
    "title": "x * rsqrt(mean(x^2) + eps) * w -> npu_rms_norm",
    "module": "norm",
    "apis": ["npu_rms_norm"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_rms_norm:*"],
    "facts": {},
    "hints": {"class_names": ["ScaledRMS"]},
    "inputs": {
        "x": {"shape": ["T", "H"], "dtype": "act"},
        "w": {"shape": ["H"], "dtype": "act", "init": "ones_noise"},
        "eps": {"dtype": "param", "value": 1e-5},
    },
    "sizes": {"T": 3, "H": 16},
    "near_misses": [
        {"file": "fixtures/scaled_rms_nomatch_sum.py", "reason": "a sum of squares is not a mean"},
    ],
    "doc_zh": """把均方根缩放替换为一次融合归一化调用。

功能
    识别最后一维上的x * rsqrt(mean(x^2) + eps) * w。
原因
    多个逐元素内核合并为一个，x只读一次。
示例
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
替代写法
    y = torch_npu.npu_rms_norm(x, w, epsilon=eps)[0]
修复安全性
    安全：算子返回二元组，取第一项。
参考
    catalog/norm/npu_rms_norm.toml
""",
}


def search(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def search_div(x, w, eps):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * w


def replace(x, w, eps):
    # The second output (1/rms) is not needed here.
    return torch_npu.npu_rms_norm(x, w, epsilon=eps)[0]
