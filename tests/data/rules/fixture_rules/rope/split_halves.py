"""Rotary embedding on split halves becomes npu_rotary_mul.

What it does
    Finds q * cos + rotate_half(q) * sin where rotate_half swaps the two
    halves of the last axis and negates the second.
Why
    The slicing, negation and concatenation are separate kernels.
Example
    q1, q2 = q.chunk(2, -1)
    out = q * cos + torch.cat((-q2, q1), -1) * sin
Use instead
    out = torch_npu.npu_rotary_mul(q, cos, sin)
Fix safety
    Needs cos/sin laid out for broadcasting over heads; the layer must build
    them once per step instead of per head.
References
    catalog/rope/npu_rotary_mul.toml
"""
import torch

try:
    import torch_npu
except ImportError:
    torch_npu = None

RULE = {
    "id": "rope.split_halves",
    "title": "rotate-half RoPE -> npu_rotary_mul(q, cos, sin)",
    "module": "rope",
    "apis": ["npu_rotary_mul"],
    "stages": ["decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "cos_sin_once", "en": "compute cos/sin once per step", "zh": "每步只计算一次cos/sin",
         "mechanical": True},
    ],
    "checks": ["npu_rotary_mul:*"],
    "facts": {"rope_layout": "half", "partial": False},
    "when": "stage == 'decode'",
    "rejects": [
        {"api": "npu_rotary_mul", "en": "interleaved pairs need rotary_mode='interleave'",
         "zh": "交错排列需要rotary_mode='interleave'", "needs": "the interleave mode"},
    ],
    "inputs": {
        "q": {"shape": ["B", "S", "N", "D"], "dtype": "act"},
        "cos": {"shape": [1, "S", 1, "D"], "dtype": "act"},
        "sin": {"shape": [1, "S", 1, "D"], "dtype": "act"},
    },
    "sizes": {"B": 1, "S": 2, "N": 2, "D": 8},
    "dtypes": ["float32"],
    "tolerance": {"float32": {"atol": 2e-5}},
    "match": {"optional_casts": True},
    "near_misses": [],
    "doc_zh": """把按两半切分的旋转位置编码替换为npu_rotary_mul。

功能
    识别q * cos + rotate_half(q) * sin，其中rotate_half交换最后一维的两半并对后一半取负。
原因
    切片、取负和拼接各是一个内核。
示例
    q1, q2 = q.chunk(2, -1)
    out = q * cos + torch.cat((-q2, q1), -1) * sin
替代写法
    out = torch_npu.npu_rotary_mul(q, cos, sin)
修复安全性
    需要cos/sin按可在头维度上广播的布局准备，并且每步只构造一次。
参考
    catalog/rope/npu_rotary_mul.toml
""",
}


def search(q, cos, sin):
    q1, q2 = q.chunk(2, -1)
    return q * cos + torch.cat((-q2, q1), -1) * sin


def replace(q, cos, sin):
    return torch_npu.npu_rotary_mul(q, cos, sin)


def naive_interleave(q, cos, sin):
    return torch_npu.npu_rotary_mul(q, cos, sin, rotary_mode="interleave")
