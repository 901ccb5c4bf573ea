"""A plain two-layer FFN `fc2(act(fc1(x)))` becomes one `npu_ffn` call where its constraints hold.

What it does
    Finds `linear(act(linear(x, W1, b1)), W2, b2)` with act one of GELU (tanh form),
    ReLU or SiLU, no gating (GPT-2/BLOOM/OPT-style MLPs, vision-tower MLPs). It proposes
    `torch_npu.npu_ffn(x, W1ᵀ, W2ᵀ, activation, bias1=b1, bias2=b2)`.
Why
    Two GEMMs, the bias adds and the activation run as one operator, so the intermediate
    activation never leaves the chip.
Example
    return self.fc2(self.act(self.fc1(hidden_states)))
Use instead
    return torch_npu.npu_ffn(hidden_states, self.w1_kn, self.w2_kn, 'gelu',
                             bias1=self.fc1.bias, bias2=self.fc2.bias)
Fix safety
    Needs prerequisites: npu_ffn takes weights as [K, N] (nn.Linear stores [N, K]); store
    the transposed weights once at load time. Only where the catalog checks hold:
    ungated activations in float16/bfloat16 (gated swiglu/geglu only in float16 and not
    quantised, so SwiGLU LLM MLPs in bfloat16 go through ffn.swiglu instead), K and N
    below 65536, no int4 weights. 'gelu' in npu_ffn is the tanh approximation: an erf
    GELU model does not match this rule.
References
    catalog/ffn/npu_ffn.toml.
"""
import math

import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "ffn.ffn_whole",
    "title": "ungated fc2(gelu_tanh(fc1(x))) -> npu_ffn (weights [K, N], where npu_ffn's limits hold)",
    "module": "ffn",
    "apis": ["npu_ffn"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "transpose_ffn_weights",
         "en": "Store fc1/fc2 weights transposed to [K, N] once at load time for npu_ffn.",
         "zh": "加载时一次性把fc1/fc2权重转置为[K, N]存储，供npu_ffn使用。",
         "mechanical": True},
    ],
    "checks": ["npu_ffn:*"],
    "facts": {"activation": "gelu_tanh", "ffn_gated": False},
    "inputs": {
        "x": {"shape": ["T", "H"], "dtype": "act"},
        "w1": {"shape": ["I", "H"], "dtype": "act", "scale": 0.1},
        "b1": {"shape": ["I"], "dtype": "act", "scale": 0.1},
        "w2": {"shape": ["H", "I"], "dtype": "act", "scale": 0.1},
        "b2": {"shape": ["H"], "dtype": "act", "scale": 0.1},
    },
    "sizes": {"T": 6, "H": 64, "I": 256},
    "dtypes": ["float32", "bfloat16"],
    "tolerance": {"bfloat16": {"atol": 0.02}},
    "match": {"explain": [{"when": "lacks argument approximate", "near_miss": "fixtures/ffn_whole_nomatch_erf_gelu.py"}]},
    "near_misses": [
        {"file": "fixtures/ffn_whole_nomatch_erf_gelu.py",
         "reason": "erf GELU: npu_ffn's 'gelu' is the tanh approximation"},
    ],
    "doc_zh": """普通两层FFN fc2(act(fc1(x)))在约束满足时替换为一次npu_ffn调用。

功能
    识别linear(act(linear(x, W1, b1)), W2, b2)，act为GELU（tanh形式）、ReLU或SiLU，无门控
    （GPT-2/BLOOM/OPT风格MLP、视觉塔MLP）。建议改为torch_npu.npu_ffn(x, W1ᵀ, W2ᵀ, activation,
    bias1=b1, bias2=b2)。
原因
    两个GEMM、bias加法和激活作为一个算子执行，中间激活不离开芯片。
示例
    return self.fc2(self.act(self.fc1(hidden_states)))
替代写法
    return torch_npu.npu_ffn(hidden_states, self.w1_kn, self.w2_kn, 'gelu',
                             bias1=self.fc1.bias, bias2=self.fc2.bias)
修复安全性
    需要前置改造：npu_ffn的权重为[K, N]（nn.Linear存储为[N, K]），加载时一次性存储转置权重。
    仅在目录检查成立时适用：无门控激活支持float16/bfloat16（门控swiglu/geglu只支持float16且
    不量化，因此bfloat16的SwiGLU LLM MLP走ffn.swiglu），K、N小于65536，无int4权重。npu_ffn中的
    'gelu'是tanh近似：erf GELU模型不匹配本规则。
参考
    catalog/ffn/npu_ffn.toml。
""",
}


def search(x, w1, b1, w2, b2):
    return F.linear(F.gelu(F.linear(x, w1, b1), approximate="tanh"), w2, b2)


def search_matmul(x, w1, b1, w2, b2):
    h = x @ w1.t() + b1
    h = 0.5 * h * (1.0 + torch.tanh(0.7978845608028654 * (h + 0.044715 * torch.pow(h, 3.0))))
    return h @ w2.t() + b2


def search_linear_tanh_formula(x, w1, b1, w2, b2):
    # GPT-J / GPT-2 "gelu_new": the tanh approximation written out between two biased linears
    h = F.linear(x, w1, b1)
    h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
    return F.linear(h, w2, b2)


def replace(x, w1, b1, w2, b2):
    return torch_npu.npu_ffn(x, w1.t().contiguous(), w2.t().contiguous(), "gelu", bias1=b1, bias2=b2)


def naive_untransposed_weights(x, w1, b1, w2, b2):
    # nn.Linear weights are [N, K]; passing them as is multiplies by the wrong matrix
    # (or fails on shape when K != N).
    return torch_npu.npu_ffn(x, w1, w2, "gelu", bias1=b1, bias2=b2)
