"""Depthwise causal conv1d over a whole sequence (a linear-attention or Mamba mixer's short convolution) becomes `npu_masked_causal_conv1d`.

What it does
    Finds the short convolution a hybrid or state-space mixer runs over the projected
    sequence in prefill: `F.conv1d(x, weight.unsqueeze(1), bias, padding=K - 1,
    groups=C)[:, :, :seq_len]` on x [B, C, S] with one K-wide kernel per channel
    (weight [C, K], nn.Conv1d's [C, 1, K] squeezed), padded by K - 1 and cut back to the
    first seq_len outputs, so that each output reads only its own and earlier positions.
    It proposes `torch_npu.npu_masked_causal_conv1d(x_sbc, weight_kc)` on the
    sequence-first layout [S, B, C] with the taps first, [K, C]; a bias is added after
    the call and the activation that usually follows (SiLU) stays where it is.
Why
    The eager form pads the sequence, runs a grouped convolution kernel over it and
    copies the kept slice; the fused operator reads each input once and writes the
    causal result directly.
Example
    out = F.conv1d(hidden_states, weight=weight.unsqueeze(1), bias=bias,
                   padding=weight.shape[-1] - 1, groups=hidden_size)[:, :, :seq_len]
Use instead
    # weight_kc = conv.weight.squeeze(1).t().contiguous()   (built once: [K, C])
    out = torch_npu.npu_masked_causal_conv1d(hidden_states.permute(2, 0, 1), weight_kc)
    out = (out + bias).permute(1, 2, 0)   # without a bias: out.permute(1, 2, 0)
Fix safety
    Needs prerequisites. The operator takes a kernel width of 3 only and runs on Ascend
    950 only (checked: conv_kernel_size == 3, from the config's linear_conv_kernel_dim,
    conv_kernel, mamba_d_conv or conv_L_cache; a width-4 model such as Qwen3-Next or
    Mamba is not applicable). Refactors by hand, mechanical ones: the weight goes from
    [C, 1, K] to [K, C] (once, after loading: squeeze and transpose; the numeric check
    covers the orientation, see naive_weight_not_transposed) and the activation from
    [B, C, S] to [S, B, C] and back. Not mechanical: the operator keeps no conv state,
    so where a decode cache follows the prompt its last K - 1 inputs are still taken in
    torch (HF's update_conv_state does that before the convolution). The activation
    and a bias stay in torch after the call. The mask argument is not used: padded
    positions are zeroed before the convolution as the model does.
References
    catalog/attention/npu_masked_causal_conv1d.toml (formula, SBH layout, W = 3, 950
    only, pitfalls).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "attention.masked_causal_conv1d",
    "title": "depthwise causal conv1d over the sequence (short conv of a linear/SSM mixer) -> npu_masked_causal_conv1d (width 3, Ascend 950)",
    "module": "attention",
    "apis": ["npu_masked_causal_conv1d"],
    "stages": ["prefill"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "conv_weight_taps_first",
         "en": "Keep the convolution weight as [K, C] (taps first): squeeze and transpose nn.Conv1d's [C, 1, K] once after loading.",
         "zh": "卷积权重保存为[K, C]（抽头维在前）：加载后一次性把nn.Conv1d的[C, 1, K]去掉中间维并转置。",
         "mechanical": False},
        {"id": "sequence_first_layout",
         "en": "Hand the operator the sequence first, [S, B, C] (permute the model's [B, C, S]), and permute its result back.",
         "zh": "以序列在前的[S, B, C]传入算子（对模型的[B, C, S]做permute），结果再permute回去。",
         "mechanical": False},
        {"id": "conv_state_in_torch",
         "en": "The operator reads and writes no conv state: where a decode cache follows the prompt, keep taking its last K - 1 inputs in torch.",
         "zh": "算子不读写卷积状态：prompt之后若有decode缓存，其最后K - 1个输入仍须用torch取出。",
         "mechanical": False},
    ],
    "checks": ["npu_masked_causal_conv1d:*"],
    "facts": {"stage": "prefill"},
    "inputs": {
        "hidden_states": {"shape": ["B", "C", "S"], "dtype": "act"},
        "weight": {"shape": ["C", "K"], "dtype": "act"},
        "bias": {"shape": ["C"], "dtype": "act"},
    },
    "sizes": {"B": 2, "C": 16, "S": 7, "K": 3},
    "dtypes": ["float32", "bfloat16"],
    "match": {"lookalikes": {"lookalike_centered": "fixtures/masked_causal_conv1d_nomatch_centered.py"}},
    "near_misses": [
        {"file": "fixtures/masked_causal_conv1d_nomatch_centered.py",
         "reason": "a centred convolution (padding (K - 1) / 2, the output kept whole) is not causal: each output also reads later positions"},
    ],
    "doc_zh": """对整条序列的深度因果一维卷积（线性注意力或Mamba混合器的短卷积）替换为npu_masked_causal_conv1d。

功能
    识别混合架构或状态空间混合器在prefill中对投影后序列做的短卷积：对x [B, C, S]执行
    F.conv1d(x, weight.unsqueeze(1), bias, padding=K - 1, groups=C)[:, :, :seq_len]，每个
    通道一个宽度为K的卷积核（weight [C, K]，即nn.Conv1d的[C, 1, K]去掉中间维），补K - 1
    个位置后只保留前seq_len个输出，使每个输出只读取自身及之前的位置。建议改为在序列在前的
    [S, B, C]排布上调用torch_npu.npu_masked_causal_conv1d(x_sbc, weight_kc)，卷积核抽头维
    在前，为[K, C]；bias在调用后相加，其后通常跟随的激活（SiLU）保持不变。
原因
    eager形式先补齐序列，再运行分组卷积内核，最后复制保留的切片；融合算子每个输入只读一次，
    直接写出因果结果。
示例
    out = F.conv1d(hidden_states, weight=weight.unsqueeze(1), bias=bias,
                   padding=weight.shape[-1] - 1, groups=hidden_size)[:, :, :seq_len]
替代写法
    # weight_kc = conv.weight.squeeze(1).t().contiguous()   （一次性构造：[K, C]）
    out = torch_npu.npu_masked_causal_conv1d(hidden_states.permute(2, 0, 1), weight_kc)
    out = (out + bias).permute(1, 2, 0)   # 无bias时：out.permute(1, 2, 0)
修复安全性
    需要前置改造。算子只支持卷积宽度3，且仅在Ascend 950上运行（检查conv_kernel_size == 3，
    取自配置的linear_conv_kernel_dim、conv_kernel、mamba_d_conv或conv_L_cache；Qwen3-Next、
    Mamba等宽度为4的模型不适用）。需手工完成的机械改造：权重从[C, 1, K]改为[K, C]（加载后
    一次性去掉中间维并转置；数值检查覆盖了方向，见naive_weight_not_transposed），激活从
    [B, C, S]改为[S, B, C]再改回。非机械部分：算子不保存卷积状态，prompt之后若接decode缓存，
    其最后K - 1个输入仍须用torch取出（HF的update_conv_state在卷积之前完成这一步）。激活与
    bias在调用后用torch保留。不使用mask参数：填充位置按模型原有方式在卷积前置0。
参考
    catalog/attention/npu_masked_causal_conv1d.toml（公式、SBH排布、W = 3、仅950、注意事项）。
""",
}


def search(hidden_states, weight, bias):
    seq_len = hidden_states.shape[-1]
    out = F.conv1d(hidden_states, weight=weight.unsqueeze(1), bias=bias, padding=weight.shape[-1] - 1,
                   groups=hidden_states.shape[1])
    return out[:, :, :seq_len]


def replace(hidden_states, weight, bias):
    out = torch_npu.npu_masked_causal_conv1d(hidden_states.permute(2, 0, 1), weight.t())
    return (out + bias).permute(1, 2, 0)


def naive_weight_not_transposed(hidden_states, weight, bias):
    # Tempting: hand nn.Conv1d's weight over squeezed but not transposed ([C, K]).
    out = torch_npu.npu_masked_causal_conv1d(hidden_states.permute(2, 0, 1), weight)
    return (out + bias).permute(1, 2, 0)


def lookalike_centered(hidden_states, weight, bias):
    # A "same" convolution: padded on both sides, every output kept.
    return F.conv1d(hidden_states, weight=weight.unsqueeze(1), bias=bias, padding=weight.shape[-1] // 2,
                    groups=hidden_states.shape[1])
