"""A hand-written LayerNorm with a scale and no shift becomes one fused normalisation and the scale.

What it does
    Finds LayerNorm spelled out in torch without a bias: subtract the mean over the last
    axis, multiply by `rsqrt(var + eps)` (or divide by `sqrt`) with the population
    variance, then multiply by a weight, usually in float32 with the result cast back
    (Cohere's LayerNorm, also used per head for its q/k norm with a [heads, head_dim]
    weight). It proposes `torch_npu.npu_layer_norm_eval(x, (D,), None, None, eps)` for
    the normalisation and the weight multiply after it.
Why
    The spelled-out chain is eight or more kernels over the activation (cast, mean, sub,
    pow, mean, add, rsqrt, mul, mul by the weight, cast); the fused normalisation reads
    it once. Twice per decoder layer (and per head for q and k where the model norms
    them), in prefill and in decode.
Example
    h = x.to(torch.float32)
    mean = h.mean(-1, keepdim=True)
    variance = (h - mean).pow(2).mean(-1, keepdim=True)
    h = (h - mean) * torch.rsqrt(variance + self.eps)
    return (self.weight.to(torch.float32) * h).to(x.dtype)
Use instead
    h = torch_npu.npu_layer_norm_eval(x.float(), (x.shape[-1],), None, None, self.eps)
    return (h * self.weight.float()).to(x.dtype)
    # with a 1-D weight of width D it may go in as the op's weight: one kernel
Fix safety
    Safe for the population variance. The weight stays a separate multiply because the
    same module is used with a per-head [heads, head_dim] weight, which the op's weight
    (shape normalized_shape) cannot take; where the weight is 1-D, passing it to the op
    saves that multiply. A chain with `+ bias` is norm.layer_norm; `x.var()` (unbiased)
    is a near-miss.
References
    catalog/norm/npu_layer_norm_eval.toml.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "norm.layer_norm_no_bias",
    "title": "hand-written LayerNorm without bias -> npu_layer_norm_eval(x, (D,), None, None, eps) * weight",
    "module": "norm",
    "apis": ["npu_layer_norm_eval"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_layer_norm_eval:*"],
    "facts": {},
    "hints": {"class_names": ["LayerNorm", "CohereLayerNorm"]},
    "inputs": {
        "x": {"shape": ["B", "S", "H"], "dtype": "act"},
        "weight": {"shape": ["H"], "dtype": "act", "init": "ones_noise"},
        "eps": {"dtype": "param", "value": 1e-5},
    },
    "sizes": {"B": 2, "S": 5, "H": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"explain": [{"when": "lacks argument unbiased", "near_miss": "fixtures/layer_norm_no_bias_nomatch_unbiased_var.py"}]},
    "near_misses": [
        {"file": "fixtures/layer_norm_no_bias_nomatch_unbiased_var.py",
         "reason": "x.var() is unbiased (divides by N - 1); the fused LayerNorm divides by N"},
    ],
    "doc_zh": """手写的无bias LayerNorm替换为一次融合归一化加权重乘法。

功能
    识别用torch展开写、没有bias的LayerNorm：在最后一维减均值，乘以rsqrt(总体方差 + eps)
    （或除以sqrt），再乘weight，通常在float32中计算后转回输入类型（Cohere的LayerNorm，
    其q/k归一化也按头使用该模块，weight形状为[头数, head_dim]）。建议归一化部分改为
    torch_npu.npu_layer_norm_eval(x, (D,), None, None, eps)，之后再乘weight。
原因
    展开写法需要八个以上内核遍历激活（转换、均值、减、平方、均值、加、rsqrt、乘、乘权重、
    转换）；融合归一化只读一次。每个解码层两次（模型对q、k做归一化时还有按头的两次），
    prefill与decode都有。
示例
    h = x.to(torch.float32)
    mean = h.mean(-1, keepdim=True)
    variance = (h - mean).pow(2).mean(-1, keepdim=True)
    h = (h - mean) * torch.rsqrt(variance + self.eps)
    return (self.weight.to(torch.float32) * h).to(x.dtype)
替代写法
    h = torch_npu.npu_layer_norm_eval(x.float(), (x.shape[-1],), None, None, self.eps)
    return (h * self.weight.float()).to(x.dtype)
    # weight为宽度D的一维张量时可直接作为算子的weight传入：只需一个内核
修复安全性
    对总体方差是安全的。权重乘法保持单独一步，因为同一模块也以按头的[头数, head_dim]权重使用，
    而算子的weight形状须等于normalized_shape；weight为一维时传给算子可省去这次乘法。带
    `+ bias`的写法由norm.layer_norm处理；x.var()（无偏）属于近似不匹配。
参考
    catalog/norm/npu_layer_norm_eval.toml。
""",
}


def search(x, weight, eps):
    h = x.to(torch.float32)
    mean = h.mean(-1, keepdim=True)
    variance = (h - mean).pow(2).mean(-1, keepdim=True)
    h = (h - mean) * torch.rsqrt(variance + eps)
    h = weight.to(torch.float32) * h
    return h.to(x.dtype)


def search_div_sqrt(x, weight, eps):
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).pow(2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * weight


def search_var_unbiased_false(x, weight, eps):
    h = x.float()
    mu = h.mean(dim=-1, keepdim=True)
    var = h.var(dim=-1, keepdim=True, unbiased=False)
    h = (h - mu) * torch.rsqrt(var + eps)
    return (h * weight.float()).to(x.dtype)


def replace(x, weight, eps):
    h = torch_npu.npu_layer_norm_eval(x.float(), (x.shape[-1],), None, None, eps)
    return (h * weight.float()).to(x.dtype)


def naive_rms_norm(x, weight, eps):
    # RMSNorm skips the mean subtraction: wrong whenever the mean is non-zero.
    return torch_npu.npu_rms_norm(x, weight, epsilon=eps)[0]
