"""Residual add + RMSNorm + static int8 quantisation becomes `npu_add_rms_norm_quant`.

What it does
    In a W8A8 model with static activation scales, finds the residual add, the RMSNorm
    of the sum and the quantisation of the normalised output with a fixed scale and
    offset (`round(y / scale + offset).clamp(-128, 127)`), the sum also carried on as
    the residual. It proposes `y_q, _, residual = torch_npu.npu_add_rms_norm_quant(
    residual, x, w, scale, offset, epsilon=eps)`.
Why
    Three chains (add, norm, quantise) that each read and write the hidden state become
    one kernel; the normalised float output is never written.
Example
    hidden = residual + hidden
    residual = hidden
    normed = rms_norm(hidden, weight, eps)
    hidden_q = torch.round(normed / input_scale + input_offset).clamp(-128, 127).to(torch.int8)
Use instead
    hidden_q, _, residual = torch_npu.npu_add_rms_norm_quant(
        residual, hidden, weight, input_scale, input_offset, epsilon=eps)
Fix safety
    Needs prerequisites: the residual threading of norm.add_rms_norm. Static quantisation
    only (per-tensor or per-channel scales known ahead); dynamic per-token quant after
    the norm is npu_add_rms_norm_dynamic_quant instead. div_mode=True divides by the
    scale, as the chain does; a chain that multiplies by an inverse scale needs
    div_mode=False. Int8 results may differ by one step (the sum is not rounded to the
    activation dtype inside the kernel). Quantised deployments only.
References
    catalog/norm/npu_add_rms_norm_quant.toml; pitfalls.md 5.2.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "quant.add_rms_norm_quant",
    "title": "residual add + RMSNorm + static int8 quant -> npu_add_rms_norm_quant (quantised models only)",
    "module": "quant",
    "apis": ["npu_add_rms_norm_quant"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "thread_residual",
         "en": "Thread the residual through the decoder layer: the sum feeds only the norm and the next residual; take the operator's third output as the new residual.",
         "zh": "在解码层中串联残差：求和结果只用于norm和下一个残差；以算子的第三个输出作为新残差。",
         "mechanical": True},
    ],
    "checks": ["npu_add_rms_norm_quant:*"],
    "facts": {},
    "when": "quant in ['w8a8', 'w8a8c8']",
    "inputs": {
        "residual": {"shape": ["T", "H"], "dtype": "act"},
        "hidden_states": {"shape": ["T", "H"], "dtype": "act"},
        "weight": {"shape": ["H"], "dtype": "act", "init": "ones_noise"},
        "input_scale": {"shape": ["H"], "dtype": "float32", "init": "uniform", "low": 0.01, "high": 0.03},
        "input_offset": {"shape": ["H"], "dtype": "float32", "init": "randint", "low": -3, "high": 4},
        "eps": {"dtype": "param", "value": 1e-6},
    },
    "sizes": {"T": 6, "H": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"lookalikes": {"lookalike_dynamic_scale": "fixtures/add_rms_norm_quant_nomatch_dynamic_scale.py"}},
    "near_misses": [
        {"file": "fixtures/add_rms_norm_quant_nomatch_dynamic_scale.py",
         "reason": "the scale is computed per token from the normalised output (dynamic quant): npu_add_rms_norm_dynamic_quant, not this operator"},
    ],
    "doc_zh": """残差相加 + RMSNorm + 静态int8量化替换为npu_add_rms_norm_quant。

功能
    在使用静态激活scale的W8A8模型中，识别残差相加、对和做RMSNorm、再用固定scale和offset量化
    归一化输出（round(y / scale + offset).clamp(-128, 127)），且该和继续作为残差。建议改为
    y_q, _, residual = torch_npu.npu_add_rms_norm_quant(residual, x, w, scale, offset, epsilon=eps)。
原因
    三段各自读写隐藏状态的计算（相加、归一化、量化）合并为一个内核；归一化的浮点输出不再写出。
示例
    hidden = residual + hidden
    residual = hidden
    normed = rms_norm(hidden, weight, eps)
    hidden_q = torch.round(normed / input_scale + input_offset).clamp(-128, 127).to(torch.int8)
替代写法
    hidden_q, _, residual = torch_npu.npu_add_rms_norm_quant(
        residual, hidden, weight, input_scale, input_offset, epsilon=eps)
修复安全性
    需要前置改造：与norm.add_rms_norm相同的残差串联。仅限静态量化（预先已知的按tensor或按通道
    scale）；norm之后按token动态量化应使用npu_add_rms_norm_dynamic_quant。div_mode=True表示除以
    scale，与计算链一致；乘以倒数scale的写法需要div_mode=False。int8结果可能差一个单位（内核中
    求和结果不舍入到激活类型）。仅用于量化部署。
参考
    catalog/norm/npu_add_rms_norm_quant.toml；pitfalls.md 5.2。
""",
}


def search(residual, hidden_states, weight, input_scale, input_offset, eps):
    hidden_states = residual + hidden_states
    residual = hidden_states
    h = hidden_states.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    normed = weight.float() * h
    q = torch.round(normed / input_scale + input_offset).clamp(-128, 127).to(torch.int8)
    return q, residual


def lookalike_dynamic_scale(residual, hidden_states, weight, input_scale, input_offset, eps):
    # Dynamic per-token quantisation of the normalised row: the scale is the row's
    # absolute maximum over 127, computed here rather than loaded (no offset).
    hidden_states = residual + hidden_states
    residual = hidden_states
    h = hidden_states.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    normed = weight.float() * h
    token_scale = normed.abs().amax(-1, keepdim=True) / 127.0
    q = torch.round(normed / token_scale).clamp(-128, 127).to(torch.int8)
    return q, residual


def replace(residual, hidden_states, weight, input_scale, input_offset, eps):
    q, _, residual = torch_npu.npu_add_rms_norm_quant(residual, hidden_states, weight,
                                                      input_scale, input_offset, epsilon=eps)
    return q, residual


def naive_multiply_mode(residual, hidden_states, weight, input_scale, input_offset, eps):
    # div_mode=False multiplies by the scale: right only for a chain storing 1 / scale.
    q, _, residual = torch_npu.npu_add_rms_norm_quant(residual, hidden_states, weight,
                                                      input_scale, input_offset, epsilon=eps,
                                                      div_mode=False)
    return q, residual
