"""A Gemma-style `(1 + weight)` RMSNorm must not become plain `npu_rms_norm(x, weight)`.

What it does
    Finds RMSNorm whose scale is `1 + weight` (Gemma, Gemma-2/3 and models derived from
    them; the weight is initialised to zeros). It reports that `npu_rms_norm` with the
    stored weight is wrong and names what fits: `npu_gemma_rms_norm(x, weight, eps)[0]`,
    which applies `(1 + gamma)` itself, or `npu_rms_norm` with a `1 + weight` tensor
    precomputed in float32 at load time.
Why
    Passing `weight` as gamma drops the `+ 1`: with weights near zero the output collapses
    towards zero, a silent numerical change. This rule exists so that a porting engineer
    sees the trap next to the chain.
Example
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
    return (h * (1.0 + self.weight.float())).type_as(x)
Use instead
    return torch_npu.npu_gemma_rms_norm(x, self.weight, self.eps)[0]
    # or, with gamma = (1.0 + self.weight.float()) computed once after loading:
    return torch_npu.npu_rms_norm(x, self.gamma, self.eps)[0]
Fix safety
    Display only. npu_gemma_rms_norm has no torch_npu documentation page in op-plugin
    26.1.0 (its semantics come from the schema and the CANN kernel documentation, A2/A3
    only), so the fix is shown, not applied. The precomputed-gamma route changes the
    module's parameters and must keep `1 + w` in float32: in bf16 the sum rounds.
References
    catalog/norm/npu_gemma_rms_norm.toml, catalog/norm/npu_rms_norm.toml (pitfalls);
    pitfalls.md 5.4.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "norm.gemma_rms_norm",
    "title": "Gemma (1 + w) RMSNorm: not npu_rms_norm(x, w); npu_gemma_rms_norm or precomputed 1 + w",
    "module": "norm",
    "apis": ["npu_gemma_rms_norm"],
    "stages": ["prefill", "decode"],
    "safety": "display_only",
    "prerequisites": [],
    "checks": ["npu_gemma_rms_norm:*"],
    "facts": {},
    "rejects": [
        {"api": "npu_rms_norm",
         "en": "npu_rms_norm multiplies by gamma, the model by (1 + weight): passing the stored weight drops the +1 and silently shrinks the output.",
         "zh": "npu_rms_norm乘以gamma，而模型乘以(1 + weight)：直接传入权重会丢掉+1，输出被静默缩小。",
         "needs": "npu_gemma_rms_norm, or npu_rms_norm with gamma = 1 + weight precomputed in float32 after loading"},
        {"api": "npu_add_rms_norm",
         "en": "npu_add_rms_norm also scales by a plain gamma: fusing the residual add into this norm with the stored weight drops the +1 in the same way.",
         "zh": "npu_add_rms_norm同样乘以gamma：用存储的权重把残差相加并入这个norm，同样会丢掉+1。",
         "needs": "npu_add_rms_norm with gamma = 1 + weight precomputed in float32 after loading"},
    ],
    "hints": {"class_names": ["GemmaRMSNorm", "Gemma2RMSNorm", "Gemma3RMSNorm"]},
    "inputs": {
        "x": {"shape": ["B", "S", "H"], "dtype": "act"},
        "weight": {"shape": ["H"], "dtype": "act", "init": "randn", "scale": 0.1},
        "eps": {"dtype": "param", "value": 1e-6},
    },
    "sizes": {"B": 2, "S": 5, "H": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"explain": [{"when": "expected add(...), found input", "near_miss": "fixtures/gemma_rms_norm_nomatch_plain_weight.py"}]},
    "near_misses": [
        {"file": "fixtures/gemma_rms_norm_nomatch_plain_weight.py",
         "reason": "the weight multiplies directly (no 1 +): this is norm.rms_norm"},
    ],
    "doc_zh": """Gemma风格的(1 + weight) RMSNorm不能替换为npu_rms_norm(x, weight)。

功能
    识别缩放因子为1 + weight的RMSNorm（Gemma、Gemma-2/3及其衍生模型，权重初始化为0）。
    报告用原权重调用npu_rms_norm是错误的，并给出可行方案：npu_gemma_rms_norm(x, weight,
    eps)[0]（算子自身加1），或在加载后用float32预先计算1 + weight再调用npu_rms_norm。
原因
    把weight作为gamma会丢掉+1：权重接近0时输出趋近于0，是静默的数值错误。本规则让移植
    工程师在该计算链旁边看到这个陷阱。
示例
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
    return (h * (1.0 + self.weight.float())).type_as(x)
替代写法
    return torch_npu.npu_gemma_rms_norm(x, self.weight, self.eps)[0]
    # 或在加载后计算一次 gamma = (1.0 + self.weight.float())：
    return torch_npu.npu_rms_norm(x, self.gamma, self.eps)[0]
修复安全性
    仅展示。op-plugin 26.1.0中npu_gemma_rms_norm没有torch_npu文档页（语义来自schema和CANN
    内核文档，仅A2/A3），因此只展示不自动应用。预计算gamma的方案会改变模块参数，且1 + w须
    保持float32：bf16下求和会舍入。
参考
    catalog/norm/npu_gemma_rms_norm.toml、catalog/norm/npu_rms_norm.toml（pitfalls）；
    pitfalls.md 5.4。
""",
}


def search(x, weight, eps):
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return (h * (1.0 + weight.float())).type_as(x)


def search_offset_after_cast(x, weight, eps):
    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps)
    return ((1 + weight.float()) * h.to(x.dtype)).to(x.dtype)


def replace(x, weight, eps):
    return torch_npu.npu_gemma_rms_norm(x, weight, epsilon=eps)[0]


def naive_plain_rms_norm(x, weight, eps):
    return torch_npu.npu_rms_norm(x, weight, epsilon=eps)[0]
