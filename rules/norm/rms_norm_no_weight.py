"""An RMSNorm without a learned scale becomes `npu_rms_norm` with a ones gamma made once.

What it does
    Finds RMSNorm written out in torch with no weight at all: `x * rsqrt(mean(x**2) + eps)`
    (or `x / sqrt(...)`), usually on the input cast to float32 with the result cast back
    (NanoChat's and HRM's norms, used before attention and the MLP, on q and k, and at the
    end). The normalised value must go straight on to a projection, an attention, a
    residual add, or a cache write, in the code analysed: where it is multiplied next, that
    multiply is most likely a weight, and the norm with its weight is another rule's
    chain; where it is only returned (a helper such as Gemma's `_norm`, whose caller
    multiplies by the weight), nothing shows it is weightless. It
    proposes `torch_npu.npu_rms_norm(x, gamma, epsilon=eps)[0]` with a ones `gamma`
    buffer of width D made once.
Why
    The chain is six kernels or more (cast, pow, mean, add, rsqrt, mul, cast back), each
    reading and writing the whole activation, twice or more per decoder layer in prefill
    and in decode; the fused kernel reads x once.
Example
    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
    def forward(self, x):
        return self._norm(x.float()).type_as(x)
Use instead
    # once, in __init__ (width = hidden size, or head_dim for the q/k norms):
    # self.register_buffer("gamma", torch.ones(width), persistent=False)
    return torch_npu.npu_rms_norm(x, self.gamma.to(x.dtype), epsilon=self.eps)[0]
Fix safety
    Needs one mechanical prerequisite: the operator takes a gamma tensor, so the module
    needs a ones buffer of the normalised width (no checkpoint change: it is not
    persistent). The kernel accumulates in float32 and rounds once, as the model's
    float32 path does.
References
    catalog/norm/npu_rms_norm.toml.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "norm.rms_norm_no_weight",
    "title": "RMSNorm without a weight -> npu_rms_norm(x, ones gamma, eps)[0]",
    "module": "norm",
    "apis": ["npu_rms_norm"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "ones_gamma_buffer",
         "en": "Give the norm module a non-persistent buffer of ones as wide as the normalised axis (hidden size, or head_dim for q/k norms), made once in __init__, and pass it as gamma.",
         "zh": "为该归一化模块在__init__中一次性注册一个非持久的全1缓冲区，宽度等于归一化的维度（隐藏维，q/k归一化时为head_dim），作为gamma传入。",
         "mechanical": True},
    ],
    "checks": ["npu_rms_norm:*"],
    "facts": {},
    "hints": {"class_names": ["RMSNorm"]},
    "inputs": {
        "x": {"shape": ["B", "S", "H"], "dtype": "act"},
        "eps": {"dtype": "param", "value": 1e-6},
    },
    "sizes": {"B": 2, "S": 5, "H": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"anchor_uses": [{"anchor": 0, "allow": ["linear", "matmul", "einsum", "add", "update"]}],
              "quiet": [{"when": "also read by mul",
                         "why": "the normalised value is multiplied next: a weighted RMSNorm, another rule's chain"},
                        {"when": "also returned by the function",
                         "why": "a helper that returns the normalised value (Gemma's _norm): its caller applies the weight"}],
              "explain": [{"when": "found sum", "near_miss": "fixtures/rms_norm_no_weight_nomatch_sum_of_squares.py"}]},
    "near_misses": [
        {"file": "fixtures/rms_norm_no_weight_nomatch_sum_of_squares.py",
         "reason": "the squares are summed, not averaged: an L2 normalisation, which RMSNorm is not (it divides by the root mean square)"},
    ],
    "doc_zh": """没有可学习缩放的RMSNorm替换为npu_rms_norm，gamma为一次性构造的全1张量。

功能
    识别用torch展开写、完全没有weight的RMSNorm：x * rsqrt(mean(x**2) + eps)（或
    x / sqrt(...)），通常先把输入转为float32、结果再转回（NanoChat与HRM的归一化，用于
    注意力和MLP之前、q与k上以及最后）。归一化结果须在所分析的代码中直接进入投影、注意力、残差加
    或缓存写入：若紧接着被乘，该乘法多半就是weight，带weight的归一化由其他规则识别；若只是
    被返回（如Gemma的_norm辅助函数，由调用方再乘weight），则无法看出它没有weight。建议改为
    torch_npu.npu_rms_norm(x, gamma, epsilon=eps)[0]，gamma为一次性构造、宽度为D的全1缓冲区。
原因
    该计算链有六个以上内核（转换、平方、均值、加、rsqrt、乘、转回），每个都读写整个激活，
    prefill与decode中每个解码层至少两次；融合内核只读一次x。
示例
    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
    def forward(self, x):
        return self._norm(x.float()).type_as(x)
替代写法
    # 在__init__中一次性注册（宽度为隐藏维，q/k归一化时为head_dim）：
    # self.register_buffer("gamma", torch.ones(width), persistent=False)
    return torch_npu.npu_rms_norm(x, self.gamma.to(x.dtype), epsilon=self.eps)[0]
修复安全性
    需要一个机械性前置改造：算子需要gamma张量，因此模块需要一个与归一化宽度相同的全1缓冲区
    （非持久，不影响权重文件）。内核以float32累加并只舍入一次，与模型的float32路径一致。
参考
    catalog/norm/npu_rms_norm.toml。
""",
}


def search(x, eps):
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return h.type_as(x)


def search_div_sqrt(x, eps):
    h = x.to(torch.float32)
    return (h / torch.sqrt(torch.mean(h * h, dim=-1, keepdim=True) + eps)).to(x.dtype)


def replace(x, eps):
    gamma = torch.ones(x.shape[-1], dtype=x.dtype)
    return torch_npu.npu_rms_norm(x, gamma, epsilon=eps)[0]


def naive_layer_norm(x, eps):
    # LayerNorm also subtracts the mean: wrong whenever the mean is non-zero.
    return torch_npu.npu_layer_norm_eval(x, (x.shape[-1],), None, None, eps)
