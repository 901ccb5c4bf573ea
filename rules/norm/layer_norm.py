"""A hand-written LayerNorm chain becomes one fused LayerNorm call.

What it does
    Finds LayerNorm spelled out in torch: subtract the mean over the last axis, divide by
    `sqrt(var + eps)` with the population variance, then `* weight + bias`. It proposes
    `torch_npu.npu_layer_norm_eval(x, (H,), weight, bias, eps)`.
Why
    The spelled-out chain is six or more kernels over the activation; one fused kernel
    reads it once. Models with their own LayerNorm code (ViT towers, older GPT-style
    blocks, LayerNorm with optional bias) miss the fused path that
    `F.layer_norm` already takes.
Example
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).pow(2).mean(-1, keepdim=True)
    y = (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias
Use instead
    y = torch_npu.npu_layer_norm_eval(x, (x.shape[-1],), self.weight, self.bias, self.eps)
    # equally good: torch.nn.functional.layer_norm, which torch_npu runs as one kernel
Fix safety
    Safe for the population variance (`unbiased=False`, `mean` of squares). A chain using
    `x.var()` (unbiased by default) or `std()` is a near-miss: the fused op divides by N.
    The catalog marks npu_layer_norm_eval as planned for deprecation in favour of
    F.layer_norm; the report says so. `nn.LayerNorm`/`F.layer_norm` calls are not
    reported: they already run fused.
References
    catalog/norm/npu_layer_norm_eval.toml.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "norm.layer_norm",
    "title": "hand-written LayerNorm -> npu_layer_norm_eval (or F.layer_norm)",
    "module": "norm",
    "apis": ["npu_layer_norm_eval"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_layer_norm_eval:*"],
    "facts": {},
    "inputs": {
        "x": {"shape": ["B", "S", "H"], "dtype": "act"},
        "weight": {"shape": ["H"], "dtype": "act", "init": "ones_noise"},
        "bias": {"shape": ["H"], "dtype": "act", "scale": 0.1},
        "eps": {"dtype": "param", "value": 1e-5},
    },
    "sizes": {"B": 2, "S": 5, "H": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"already_fused": ["layer_norm"], "contains": ["norm.layer_norm_no_bias"],
              "explain": [{"when": "lacks argument unbiased", "near_miss": "fixtures/layer_norm_nomatch_unbiased_var.py"},
                          {"when": "already computes this as one fused call",
                           "near_miss": "fixtures/layer_norm_nomatch_already_functional.py"}]},
    "near_misses": [
        {"file": "fixtures/layer_norm_nomatch_unbiased_var.py",
         "reason": "x.var() is unbiased (divides by N - 1); the fused LayerNorm divides by N"},
        {"file": "fixtures/layer_norm_nomatch_already_functional.py",
         "reason": "F.layer_norm already runs as one fused kernel under torch_npu: nothing to gain"},
    ],
    "doc_zh": """手写的LayerNorm计算链替换为一次融合LayerNorm调用。

功能
    识别用torch展开写的LayerNorm：在最后一维减均值，除以sqrt(总体方差 + eps)，再乘weight加
    bias。建议改为torch_npu.npu_layer_norm_eval(x, (H,), weight, bias, eps)。
原因
    展开写法需要六个以上内核遍历激活；融合内核只读一次。自己实现LayerNorm的模型（ViT视觉塔、
    较早的GPT式块、可选bias的LayerNorm）错过了F.layer_norm本已走的融合路径。
示例
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).pow(2).mean(-1, keepdim=True)
    y = (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias
替代写法
    y = torch_npu.npu_layer_norm_eval(x, (x.shape[-1],), self.weight, self.bias, self.eps)
    # 同样可行：torch.nn.functional.layer_norm，torch_npu将其作为单个内核执行
修复安全性
    对总体方差（unbiased=False，平方的均值）是安全的。使用x.var()（默认无偏）或std()的写法
    属于近似不匹配：融合算子除以N。目录将npu_layer_norm_eval标记为计划废弃、推荐
    F.layer_norm，报告会说明这一点。nn.LayerNorm/F.layer_norm调用不报告：它们已是融合执行。
参考
    catalog/norm/npu_layer_norm_eval.toml。
""",
}


def search(x, weight, bias, eps):
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).pow(2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def search_var_unbiased_false(x, weight, bias, eps):
    h = x.float()
    mu = h.mean(dim=-1, keepdim=True)
    var = h.var(dim=-1, keepdim=True, unbiased=False)
    h = (h - mu) * torch.rsqrt(var + eps)
    return (h * weight.float() + bias.float()).to(x.dtype)


def search_centred_first(x, weight, bias, eps):
    centred = x - x.mean(dim=-1, keepdim=True)
    rstd = torch.rsqrt((centred * centred).mean(dim=-1, keepdim=True) + eps)
    return weight * (centred * rstd) + bias


def replace(x, weight, bias, eps):
    return torch_npu.npu_layer_norm_eval(x, (x.shape[-1],), weight, bias, eps)


def naive_rms_norm(x, weight, bias, eps):
    # RMSNorm skips the mean subtraction: wrong for LayerNorm whenever the mean is non-zero.
    return torch_npu.npu_rms_norm(x, weight, epsilon=eps)[0] + bias
