"""Per-token symmetric int8 activation quantisation becomes `npu_dynamic_quant`.

What it does
    In a W8A8 model, finds the activation quantiser that computes one scale per token
    (`amax(|x|, -1) / 127`), divides, rounds and clamps to int8. It proposes
    `q, scale = torch_npu.npu_dynamic_quant(x)`.
Why
    Reduction, division, rounding, clamping and casting are five passes over the
    activation before every quantised linear; the fused kernel does one.
Example
    scale = x.abs().amax(dim=-1, keepdim=True) / 127.0
    q = torch.round(x / scale).clamp(-128, 127).to(torch.int8)
Use instead
    q, scale = torch_npu.npu_dynamic_quant(x)
Fix safety
    Safe within a quantised deployment: the operator's scale has the leading shape of x
    (no trailing 1) and is float32; a chain that keeps `keepdim=True` reshapes at the
    consumer. Rounding ties may differ by one step (the int8 tolerance). Only considered
    when the model or --quant says w8a8/w8a8c8.
References
    catalog/quant/npu_dynamic_quant.toml.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "quant.dynamic_quant",
    "title": "per-token symmetric int8 quantisation -> npu_dynamic_quant (quantised models only)",
    "module": "quant",
    "apis": ["npu_dynamic_quant"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_dynamic_quant:*"],
    "facts": {},
    "when": "quant in ['w8a8', 'w8a8c8']",
    "inputs": {"x": {"shape": ["T", "H"], "dtype": "act"}},
    "sizes": {"T": 6, "H": 64},
    "dtypes": ["float32", "bfloat16"],
    "near_misses": [
        {"file": "fixtures/dynamic_quant_nomatch_per_tensor_static.py",
         "reason": "one fixed scale for the whole tensor (static quantisation): not per-token dynamic"},
    ],
    "match": {"near_miss_share": 0.25,
              "explain": [{"when": "expected div(...), found input", "near_miss": "fixtures/dynamic_quant_nomatch_per_tensor_static.py"}]},
    "doc_zh": """按token对称的int8激活量化替换为npu_dynamic_quant。

功能
    在W8A8模型中识别为每个token计算一个scale（amax(|x|, -1) / 127）、相除、取整并截断到int8的
    激活量化器。建议改为q, scale = torch_npu.npu_dynamic_quant(x)。
原因
    规约、除法、取整、截断、类型转换在每个量化线性层之前要对激活遍历五次；融合内核只需一次。
示例
    scale = x.abs().amax(dim=-1, keepdim=True) / 127.0
    q = torch.round(x / scale).clamp(-128, 127).to(torch.int8)
替代写法
    q, scale = torch_npu.npu_dynamic_quant(x)
修复安全性
    在量化部署中安全：算子的scale形状为x的前导维（没有末尾的1），类型为float32；保留keepdim=True
    的写法需在使用处reshape。取整遇到恰好一半的情况可能差一个量化单位（int8容差）。仅当模型或
    --quant为w8a8/w8a8c8时才考虑。
参考
    catalog/quant/npu_dynamic_quant.toml。
""",
}


def search(x):
    x_f = x.float()
    scale = x_f.abs().amax(dim=-1, keepdim=True) / 127.0
    q = torch.round(x_f / scale).clamp(-128, 127).to(torch.int8)
    return q, scale.squeeze(-1)


def search_max_values(x):
    x_f = x.to(torch.float32)
    amax = torch.max(torch.abs(x_f), dim=-1, keepdim=True)[0]
    scale = amax / 127
    q = (x_f / scale).round().clamp(min=-128, max=127).to(torch.int8)
    return q, scale.view(-1)


def replace(x):
    q, scale = torch_npu.npu_dynamic_quant(x)
    return q, scale
