"""RMSNorm written out in torch becomes one `npu_rms_norm` call.

What it does
    Finds root-mean-square normalisation over the last axis followed by a per-channel
    weight, in any of its usual spellings: `rsqrt(mean(x**2) + eps)` or
    `1 / sqrt(...)`, `pow(2)` or `x * x`, the cast to float32 and back before or after the
    weight multiply, and `F.rms_norm`. It proposes `torch_npu.npu_rms_norm(x, w, eps)[0]`.
Why
    The eager chain is five to seven kernels (cast, square, mean, add, rsqrt, two
    multiplies, cast) that each read and write the whole activation. The fused kernel reads
    x once and keeps the float32 intermediates on chip. It runs twice per decoder layer plus
    once at the end, in prefill and in decode.
Example
    h32 = x.to(torch.float32)
    h32 = h32 * torch.rsqrt(h32.pow(2).mean(-1, keepdim=True) + self.eps)
    return self.weight * h32.to(x.dtype)
Use instead
    return torch_npu.npu_rms_norm(x, self.weight, epsilon=self.eps)[0]
Fix safety
    Safe. The operator returns `(y, rstd)`; the replacement takes `[0]`. The fused kernel
    multiplies by the weight in float32 and rounds once, where HF code rounds to the input
    dtype before the multiply: expect differences of one bf16 step, not bit equality.
    A Gemma-style `(1 + weight)` norm is a different rule (norm.gemma_rms_norm).
References
    catalog/norm/npu_rms_norm.toml; pitfalls.md 5.1 (tuple return), 5.4, 5.5 (cast order).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "norm.rms_norm",
    "title": "RMSNorm chain -> npu_rms_norm(x, w, eps)[0]",
    "module": "norm",
    "apis": ["npu_rms_norm"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_rms_norm:*"],
    "facts": {"norm_gamma_dtype": "input"},
    "hints": {"class_names": ["RMSNorm", "LlamaRMSNorm", "Qwen2RMSNorm", "Qwen3RMSNorm"],
              "hub_kernels": ["RMSNorm"]},
    "inputs": {
        "hidden_states": {"shape": ["B", "S", "H"], "dtype": "act"},
        "weight": {"shape": ["H"], "dtype": "act", "init": "ones_noise"},
        "eps": {"dtype": "param", "value": 1e-6},
    },
    "sizes": {"B": 2, "S": 5, "H": 64},
    "dtypes": ["float32", "bfloat16"],
    "min_torch": {"search_f_rms_norm": "2.4"},
    "match": {"not_from": {"weight": ["add", "sub", "rsqrt", "sqrt", "div"], "hidden_states": ["sub"]},
              "explain": [{"when": "hidden_states is computed by sub(", "near_miss": "fixtures/rms_norm_nomatch_layer_norm.py"},
                          {"when": "weight is computed by add(", "near_miss": "fixtures/rms_norm_nomatch_gemma_offset.py"},
                          {"when": "found sum(", "near_miss": "fixtures/rms_norm_nomatch_sum_not_mean.py"}]},
    "near_misses": [
        {"file": "fixtures/rms_norm_nomatch_layer_norm.py",
         "reason": "the mean is subtracted before the square: this is LayerNorm, not RMSNorm"},
        {"file": "fixtures/rms_norm_nomatch_gemma_offset.py",
         "reason": "the weight enters as (1 + weight): npu_rms_norm would drop the +1 (see norm.gemma_rms_norm)"},
        {"file": "fixtures/rms_norm_nomatch_sum_not_mean.py",
         "reason": "the squares are summed, not averaged (L2 normalisation): the result differs by sqrt(H)"},
    ],
    "doc_zh": """把用torch写出的RMSNorm替换为一次npu_rms_norm调用。

功能
    识别在最后一维上做均方根归一化再乘以逐通道权重的各种写法：rsqrt(mean(x**2) + eps)
    或1 / sqrt(...)，pow(2)或x * x，乘权重之前或之后转换回输入类型，以及F.rms_norm。
    建议改为torch_npu.npu_rms_norm(x, w, eps)[0]。
原因
    原写法要启动五到七个内核，每个都完整读写一遍激活；融合算子只读一次x，float32中间
    结果留在片上。每个解码层调用两次、最后再调用一次，预填充和解码阶段都受益。
示例
    h32 = x.to(torch.float32)
    h32 = h32 * torch.rsqrt(h32.pow(2).mean(-1, keepdim=True) + self.eps)
    return self.weight * h32.to(x.dtype)
替代写法
    return torch_npu.npu_rms_norm(x, self.weight, epsilon=self.eps)[0]
修复安全性
    安全。算子返回(y, rstd)，替换时取[0]。融合算子在float32中乘权重后只舍入一次，而HF代码
    在乘权重前先转回输入类型：bf16下会有一个最小精度单位的差异，不是逐位一致。
    Gemma风格的(1 + weight)归一化属于另一条规则（norm.gemma_rms_norm）。
参考
    catalog/norm/npu_rms_norm.toml；pitfalls.md 5.1（元组返回）、5.4、5.5（转换顺序）。
""",
}


def search(hidden_states, weight, eps):
    orig_dtype = hidden_states.dtype
    h32 = hidden_states.to(torch.float32)
    mean_sq = h32.pow(2).mean(-1, keepdim=True)
    h32 = h32 * torch.rsqrt(mean_sq + eps)
    return weight * h32.to(orig_dtype)


def search_cast_after_weight(hidden_states, weight, eps):
    input_dtype = hidden_states.dtype
    x = hidden_states.float()
    x = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (x * weight.float()).to(input_dtype)


def search_div_sqrt(hidden_states, weight, eps):
    x = hidden_states.float()
    norm = torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + eps)
    return (x / norm).type_as(hidden_states) * weight


def search_reciprocal(hidden_states, weight, eps):
    x = hidden_states.float()
    rms = 1.0 / torch.sqrt((x ** 2).mean(-1, keepdim=True) + eps)
    return weight * (x * rms).to(hidden_states.dtype)


def search_f_rms_norm(hidden_states, weight, eps):
    return F.rms_norm(hidden_states, (hidden_states.shape[-1],), weight, eps)


def replace(hidden_states, weight, eps):
    return torch_npu.npu_rms_norm(hidden_states, weight, epsilon=eps)[0]


def naive_gemma_kernel(hidden_states, weight, eps):
    # npu_gemma_rms_norm scales by (1 + gamma): wrong for a plain weight (expert must-not).
    return torch_npu.npu_gemma_rms_norm(hidden_states, weight, epsilon=eps)[0]
