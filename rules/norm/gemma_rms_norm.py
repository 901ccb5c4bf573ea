"""A Gemma-style `(1 + weight)` RMSNorm becomes `npu_rms_norm` with a float32 `1 + weight` gamma.

What it does
    Finds RMSNorm whose scale is `1 + weight` (Gemma, Gemma-2/3, Qwen3-Next and the models
    derived from them; the stored weight starts at zero). It proposes `npu_rms_norm` with
    gamma = `1 + weight` computed in float32, which A2/A3 accept next to a bf16 or fp16 x,
    and it refuses every mapping that passes the stored weight as gamma.
Why
    The norm runs before every attention and every MLP. The fused kernel reads x once; the
    written-out chain reads and writes it four to six times. Passing `weight` itself as gamma
    drops the `+ 1`: with weights near zero the output collapses towards zero, a silent
    numerical change, so that mapping is refused next to the chain.
Example
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
    return (h * (1.0 + self.weight.float())).type_as(x)
Use instead
    return torch_npu.npu_rms_norm(x, 1.0 + self.weight.float(), self.eps)[0]
    # the gamma can be computed once after loading and kept as a float32 buffer
Fix safety
    Safe: the float32 `1 + weight` is what the model multiplies by, so the numbers are the
    model's. The per-call add is one tiny [H] kernel; a buffer computed after loading
    saves it. Atlas inference and training products need gamma in x's dtype: there the
    float32 gamma needs float32 activations (checked). `npu_gemma_rms_norm`, which adds
    the 1 itself, is in the op-plugin schema but has no torch_npu doc page in 26.1.0, so it
    is not proposed.
References
    catalog/norm/npu_rms_norm.toml (gamma dtypes per product), catalog/norm/npu_gemma_rms_norm.toml;
    pitfalls.md 5.4.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "norm.gemma_rms_norm",
    "title": "Gemma (1 + w) RMSNorm -> npu_rms_norm(x, float32 1 + w) (never the stored weight)",
    "module": "norm",
    "apis": ["npu_rms_norm"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_rms_norm:*"],
    "facts": {"norm_gamma_dtype": "float32"},
    "rejects": [
        {"api": "npu_rms_norm",
         "en": "npu_rms_norm multiplies by gamma, the model by (1 + weight): passing the stored weight drops the +1 and silently shrinks the output.",
         "zh": "npu_rms_norm乘以gamma，而模型乘以(1 + weight)：直接传入权重会丢掉+1，输出被静默缩小。",
         "needs": "npu_rms_norm with gamma = 1 + weight in float32 (this rule)"},
        {"api": "npu_add_rms_norm",
         "en": "npu_add_rms_norm also scales by a plain gamma: fusing the residual add into this norm with the stored weight drops the +1 in the same way.",
         "zh": "npu_add_rms_norm同样乘以gamma：用存储的权重把残差相加并入这个norm，同样会丢掉+1。",
         "needs": "npu_add_rms_norm with gamma = 1 + weight (norm.add_gemma_rms_norm)",
         "spares": ["norm.add_gemma_rms_norm"]},
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
    "doc_zh": """Gemma风格的(1 + weight) RMSNorm替换为以float32的1 + weight为gamma的npu_rms_norm。

功能
    识别缩放因子为1 + weight的RMSNorm（Gemma、Gemma-2/3、Qwen3-Next及其衍生模型，存储的权重从0
    开始）。建议用float32计算gamma = 1 + weight再调用npu_rms_norm（A2/A3允许bf16或fp16的x配
    float32的gamma），并拒绝一切把存储权重直接当作gamma的映射。
原因
    每个注意力和MLP之前都要做一次归一化。融合算子只读一次x，展开写法要读写四到六次。直接把
    weight当gamma会丢掉+1：权重接近0时输出趋近于0，是静默的数值错误，因此该映射在计算链旁被拒绝。
示例
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
    return (h * (1.0 + self.weight.float())).type_as(x)
替代写法
    return torch_npu.npu_rms_norm(x, 1.0 + self.weight.float(), self.eps)[0]
    # gamma也可在加载后计算一次，保存为float32 buffer
修复安全性
    安全：float32的1 + weight正是模型所乘的值，数值与模型一致。每次调用多一个[H]大小的加法；
    加载后预先算好的buffer可省去它。Atlas推理与训练系列产品要求gamma与x同dtype：在这些产品上
    float32的gamma要求激活也为float32（会检查）。自带加1的npu_gemma_rms_norm在op-plugin的schema
    中存在，但26.1.0没有torch_npu文档页，因此不作推荐。
参考
    catalog/norm/npu_rms_norm.toml（各产品的gamma类型），catalog/norm/npu_gemma_rms_norm.toml；
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
    return torch_npu.npu_rms_norm(x, 1.0 + weight.float(), epsilon=eps)[0]


def naive_plain_rms_norm(x, weight, eps):
    return torch_npu.npu_rms_norm(x, weight, epsilon=eps)[0]
