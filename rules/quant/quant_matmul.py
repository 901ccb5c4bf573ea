"""A W8A8 linear (int8 x int8 matmul, per-channel weight scale, per-token activation scale) becomes `npu_quant_matmul`.

What it does
    Finds the dequantising matmul of a W8A8 linear written in torch:
    `(x_q.float() @ w_q.float().t()) * x_scale[:, None] * w_scale[None, :]` cast to the
    activation dtype. It proposes `torch_npu.npu_quant_matmul(x_q, w_q.t(), w_scale,
    pertoken_scale=x_scale, output_dtype=torch.bfloat16)`.
Why
    The torch form converts both int8 operands to float and runs a float GEMM, losing
    the int8 cube throughput and reading four times the bytes; the fused kernel
    multiplies int8 with int32 accumulation and applies both scales in its epilogue.
Example
    out = torch.matmul(x_q.float(), self.weight_q.float().t())
    out = (out * x_scale[:, None] * self.weight_scale[None, :]).to(torch.bfloat16)
Use instead
    out = torch_npu.npu_quant_matmul(x_q, self.weight_q_kn, self.weight_scale,
                                     pertoken_scale=x_scale, output_dtype=torch.bfloat16)
Fix safety
    Needs prerequisites: the weight is stored transposed [K, N] (mechanical at load
    time; often also cast to the NZ format with npu_format_cast). pertoken_scale needs
    output_dtype float16/bfloat16; bfloat16 output with float32 scales on A2/A3. Checked:
    K and N at most 65535. Only in quantised deployments.
References
    catalog/matmul/npu_quant_matmul.toml; reference_chains.md (W8A8 decode path).
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "quant.quant_matmul",
    "title": "int8 x int8 matmul with per-token and per-channel scales -> npu_quant_matmul (quantised models only)",
    "module": "quant",
    "apis": ["npu_quant_matmul"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "weight_kn_layout",
         "en": "Store the int8 weight transposed as [K, N] once at load time (optionally in NZ format via npu_format_cast).",
         "zh": "加载时一次性把int8权重转置为[K, N]存储（可选用npu_format_cast转为NZ格式）。",
         "mechanical": True},
    ],
    "checks": ["npu_quant_matmul:*"],
    "facts": {},
    "when": "quant in ['w8a8', 'w8a8c8']",
    "inputs": {
        "x_q": {"shape": ["T", "K"], "dtype": "int8", "init": "randint", "low": -128, "high": 128},
        "x_scale": {"shape": ["T"], "dtype": "float32", "init": "uniform", "low": 0.001, "high": 0.01},
        "weight_q": {"shape": ["N", "K"], "dtype": "int8", "init": "randint", "low": -128, "high": 128},
        "weight_scale": {"shape": ["N"], "dtype": "float32", "init": "uniform", "low": 0.001, "high": 0.01},
    },
    "sizes": {"T": 5, "K": 64, "N": 48},
    "dtypes": ["float32"],
    "match": {"lookalikes": {"lookalike_weight_only": {
                                 "near_miss": "fixtures/quant_matmul_nomatch_weight_only.py",
                                 "inputs": {"x": {"shape": ["T", "K"], "dtype": "act"}}},
                             "lookalike_weight_only_linear": {
                                 "near_miss": "fixtures/quant_matmul_nomatch_weight_only.py",
                                 "inputs": {"x": {"shape": ["T", "K"], "dtype": "act"}}}}},
    "near_misses": [
        {"file": "fixtures/quant_matmul_nomatch_weight_only.py",
         "reason": "the activation stays in floating point and only the weight is int8 (weight-only quantisation): npu_weight_quant_batchmatmul territory, not W8A8"},
    ],
    "doc_zh": """W8A8线性层（int8乘int8矩阵乘，按通道的权重scale、按token的激活scale）替换为npu_quant_matmul。

功能
    识别用torch写出的W8A8线性层反量化矩阵乘：(x_q.float() @ w_q.float().t()) * x_scale[:, None] *
    w_scale[None, :]再转为激活类型。建议改为torch_npu.npu_quant_matmul(x_q, w_q.t(), w_scale,
    pertoken_scale=x_scale, output_dtype=torch.bfloat16)。
原因
    torch写法把两个int8操作数都转为浮点再做浮点GEMM，失去int8 cube的吞吐并读取四倍字节；融合内核
    以int32累加做int8乘法，并在收尾阶段应用两个scale。
示例
    out = torch.matmul(x_q.float(), self.weight_q.float().t())
    out = (out * x_scale[:, None] * self.weight_scale[None, :]).to(torch.bfloat16)
替代写法
    out = torch_npu.npu_quant_matmul(x_q, self.weight_q_kn, self.weight_scale,
                                     pertoken_scale=x_scale, output_dtype=torch.bfloat16)
修复安全性
    需要前置改造：权重转置为[K, N]存储（加载时可机械完成；通常还用npu_format_cast转为NZ格式）。
    pertoken_scale要求output_dtype为float16/bfloat16；A2/A3上float32 scale配bfloat16输出。检查项：
    K、N不超过65535。仅用于量化部署。
参考
    catalog/matmul/npu_quant_matmul.toml；reference_chains.md（W8A8解码路径）。
""",
}


def search(x_q, x_scale, weight_q, weight_scale):
    out = torch.matmul(x_q.float(), weight_q.float().t())
    out = out * x_scale[:, None] * weight_scale[None, :]
    return out.to(torch.bfloat16)


def search_linear(x_q, x_scale, weight_q, weight_scale):
    acc = torch.nn.functional.linear(x_q.to(torch.float32), weight_q.to(torch.float32))
    return (acc * weight_scale * x_scale.unsqueeze(-1)).to(torch.bfloat16)



def search_operator_views(x_q, x_scale, weight_q, weight_scale):
    # `@` with `.T`, both scales shaped by view.
    acc = x_q.float() @ weight_q.float().T
    return (acc * x_scale.view(-1, 1) * weight_scale.view(1, -1)).bfloat16()

def lookalike_weight_only(x_q, x_scale, weight_q, weight_scale, x=None):
    # W8A16: only the weight is int8. It is dequantised (cast, times its per-channel
    # scale) and multiplies the activation x, which stays floating point; no
    # per-token scale. The result is cast as a bfloat16 model's activations are.
    w = weight_q.to(x.dtype) * weight_scale.unsqueeze(-1).to(x.dtype)
    return (x @ w.t()).to(torch.bfloat16)


def lookalike_weight_only_linear(x_q, x_scale, weight_q, weight_scale, x=None):
    # The same W8A16 dequantisation feeding F.linear.
    w = weight_q.to(x.dtype) * weight_scale.unsqueeze(-1).to(x.dtype)
    return torch.nn.functional.linear(x, w).to(torch.bfloat16)


def replace(x_q, x_scale, weight_q, weight_scale):
    return torch_npu.npu_quant_matmul(x_q, weight_q.t().contiguous(), weight_scale,
                                      pertoken_scale=x_scale, output_dtype=torch.bfloat16)


def naive_without_pertoken_scale(x_q, x_scale, weight_q, weight_scale):
    return torch_npu.npu_quant_matmul(x_q, weight_q.t().contiguous(), weight_scale,
                                      output_dtype=torch.bfloat16)
