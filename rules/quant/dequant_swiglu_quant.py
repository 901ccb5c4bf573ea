"""Dequantise + SwiGLU + per-token requantise in a W8A8 MLP becomes `npu_dequant_swiglu_quant`.

What it does
    Finds, between two W8A8 matmuls, the int32 accumulator of gate_up dequantised by
    the weight and activation scales, SwiGLU on the `[gate, up]` halves, and dynamic
    per-token int8 quantisation of the result for the down projection. It proposes
    `q, scale = torch_npu.npu_dequant_swiglu_quant(x_int32, weight_scale=ws,
    activation_scale=as, activate_left=True, quant_mode=1)`.
Why
    Dequantise, activation, multiply, amax, divide, round and cast are seven passes over
    the widest tensor of the MLP; the fused kernel reads the int32 accumulator once and
    writes int8 plus one scale per token (the expert Qwen W8A8 port does this).
Example
    h = gate_up_i32.float() * weight_scale * act_scale[:, None]
    gate, up = h.chunk(2, dim=-1)
    a = F.silu(gate) * up
    scale = a.abs().amax(-1, keepdim=True) / 127
    a_q = torch.round(a / scale).clamp(-128, 127).to(torch.int8)
Use instead
    a_q, scale = torch_npu.npu_dequant_swiglu_quant(
        gate_up_i32, weight_scale=weight_scale, activation_scale=act_scale,
        activate_left=True, quant_mode=1)
Fix safety
    Safe in quantised deployments when gate is the first half. `activate_left` defaults
    to False, which applies SiLU to the second half: always pass activate_left=True for
    `[gate, up]` (the numeric check shows the default is wrong). The GPT-OSS clamped
    variant uses swiglu_mode=1 (even/odd columns, clamp_limit, glu_alpha, glu_bias).
References
    catalog/ffn/npu_dequant_swiglu_quant.toml; pitfalls.md 3.3, 3.4.
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "quant.dequant_swiglu_quant",
    "title": "int32 gate_up -> dequant -> SwiGLU -> per-token int8 quant -> npu_dequant_swiglu_quant (quantised models only)",
    "module": "quant",
    "apis": ["npu_dequant_swiglu_quant"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_dequant_swiglu_quant:*"],
    "facts": {"activation": "silu", "ffn_gated": True, "glu_order": "gate_first", "glu_clamped": False},
    "when": "quant in ['w8a8', 'w8a8c8']",
    "inputs": {
        "gate_up_i32": {"shape": ["T", "2 * I"], "dtype": "int32", "init": "randint", "low": -20000, "high": 20000},
        "weight_scale": {"shape": ["2 * I"], "dtype": "float32", "init": "uniform", "low": 0.0005, "high": 0.002},
        "activation_scale": {"shape": ["T"], "dtype": "float32", "init": "uniform", "low": 0.01, "high": 0.05},
    },
    "sizes": {"T": 6, "I": 64},
    "dtypes": ["float32"],
    "match": {"lookalikes": {"lookalike_unquantised": "fixtures/dequant_swiglu_quant_nomatch_bf16_mlp.py"}},
    "near_misses": [
        {"file": "fixtures/dequant_swiglu_quant_nomatch_bf16_mlp.py",
         "reason": "no dequantisation or requantisation around the SwiGLU (unquantised model): see ffn.swiglu_merged"},
    ],
    "doc_zh": """W8A8 MLP中的反量化 + SwiGLU + 按token再量化替换为npu_dequant_swiglu_quant。

功能
    在两个W8A8矩阵乘之间，识别gate_up的int32累加结果按权重和激活scale反量化、对[gate, up]两半做
    SwiGLU、再按token动态int8量化供down投影使用的计算链。建议改为q, scale =
    torch_npu.npu_dequant_swiglu_quant(x_int32, weight_scale=ws, activation_scale=as,
    activate_left=True, quant_mode=1)。
原因
    反量化、激活、乘法、amax、除法、取整、类型转换要对MLP最宽的张量遍历七次；融合内核只读一次int32
    累加结果，写出int8和每token一个scale（专家Qwen W8A8移植即如此）。
示例
    h = gate_up_i32.float() * weight_scale * act_scale[:, None]
    gate, up = h.chunk(2, dim=-1)
    a = F.silu(gate) * up
    scale = a.abs().amax(-1, keepdim=True) / 127
    a_q = torch.round(a / scale).clamp(-128, 127).to(torch.int8)
替代写法
    a_q, scale = torch_npu.npu_dequant_swiglu_quant(
        gate_up_i32, weight_scale=weight_scale, activation_scale=act_scale,
        activate_left=True, quant_mode=1)
修复安全性
    在量化部署中、gate为前一半时安全。activate_left默认为False，即对后一半做SiLU：对[gate, up]
    必须传activate_left=True（数值检查表明默认值是错的）。GPT-OSS的clamp变体使用swiglu_mode=1
    （奇偶列、clamp_limit、glu_alpha、glu_bias）。
参考
    catalog/ffn/npu_dequant_swiglu_quant.toml；pitfalls.md 3.3、3.4。
""",
}


def search(gate_up_i32, weight_scale, activation_scale):
    h = gate_up_i32.float() * weight_scale * activation_scale[:, None]
    gate, up = h.chunk(2, dim=-1)
    a = F.silu(gate) * up
    scale = a.abs().amax(dim=-1, keepdim=True) / 127.0
    a_q = torch.round(a / scale).clamp(-128, 127).to(torch.int8)
    return a_q, scale.squeeze(-1)



def search_slices(gate_up_i32, weight_scale, activation_scale):
    # A module's forward: halves by slicing, the token scale unsqueezed.
    h = gate_up_i32.float() * weight_scale * activation_scale.unsqueeze(-1)
    d = h.shape[-1] // 2
    a = F.silu(h[..., :d]) * h[..., d:]
    scale = a.abs().amax(dim=-1, keepdim=True) / 127.0
    a_q = torch.round(a / scale).clamp(-128, 127).to(torch.int8)
    return a_q, scale.squeeze(-1)


def search_split_reciprocal(gate_up_i32, weight_scale, activation_scale):
    # SiLU written out with sigmoid, the row maximum by torch.max, and the quantiser
    # multiplying by 127 / max instead of dividing by max / 127.
    h = gate_up_i32.float() * weight_scale * activation_scale.view(-1, 1)
    gate, up = torch.split(h, h.shape[-1] // 2, dim=-1)
    a = gate * torch.sigmoid(gate) * up
    peak = torch.max(a.abs(), dim=-1, keepdim=True)[0]
    a_q = torch.clamp(torch.round(a * (127.0 / peak)), -128, 127).to(torch.int8)
    return a_q, (peak / 127.0).squeeze(-1)

def lookalike_unquantised(gate_up_i32, weight_scale, activation_scale):
    # the plain SwiGLU of an unquantised MLP: no dequantisation before it, no int8 after it
    gate, up = gate_up_i32.float().chunk(2, dim=-1)
    return F.silu(gate) * up


def replace(gate_up_i32, weight_scale, activation_scale):
    return torch_npu.npu_dequant_swiglu_quant(
        gate_up_i32, weight_scale=weight_scale, activation_scale=activation_scale,
        activate_left=True, quant_mode=1)


def naive_default_activate_left(gate_up_i32, weight_scale, activation_scale):
    return torch_npu.npu_dequant_swiglu_quant(
        gate_up_i32, weight_scale=weight_scale, activation_scale=activation_scale, quant_mode=1)
