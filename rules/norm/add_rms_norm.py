"""Residual add followed by RMSNorm becomes one `npu_add_rms_norm` call.

What it does
    Finds `h = residual + x` whose sum is normalised by an RMSNorm (written out, or
    `F.rms_norm` as in DeepSeek's `Block`) and also carried on as the next residual. It proposes
    `y, _, residual = torch_npu.npu_add_rms_norm(residual, x, w, eps)`: the third output
    is the sum and replaces the residual for the rest of the layer.
Why
    The add and the norm each read and write the full hidden state. The fused kernel
    reads both inputs once and writes the normalised output and the sum together. In a
    decoder layer this happens twice (before attention and before the MLP), in both stages.
Example
    hidden_states = residual + hidden_states
    residual = hidden_states
    hidden_states = self.post_attention_layernorm(hidden_states)
Use instead
    hidden_states, _, residual = torch_npu.npu_add_rms_norm(
        residual, hidden_states, self.post_attention_layernorm.weight,
        self.post_attention_layernorm.variance_epsilon)
Fix safety
    Needs prerequisites. The add and the norm sit in different statements (often across
    the attention block), so the rewrite threads the residual through the layer: the sum
    must have no consumer other than the norm and the next residual add. The first
    decoder layer has no pending add before its input norm; it keeps a plain
    `npu_rms_norm` (norm.rms_norm) or receives a zero residual. The fused kernel adds in
    float32 before rounding, HF code rounds the sum first: one bf16 step of difference.
    A branch scaled before the add (Granite's `residual_multiplier`) keeps its multiply;
    the fused call adds the scaled value.
References
    catalog/norm/npu_add_rms_norm.toml; pitfalls.md 5.2 (3-tuple, third output is the new
    residual); reference_chains.md module-attention-gqa.
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "norm.add_rms_norm",
    "title": "residual add + RMSNorm -> npu_add_rms_norm (third output is the new residual)",
    "module": "norm",
    "apis": ["npu_add_rms_norm"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "thread_residual",
         "en": "Thread the residual through the decoder layer: the sum residual + x feeds only the norm and the next residual; take the operator's third output as the new residual.",
         "zh": "在解码层中串联残差：residual + x 的结果只用于norm和下一次残差相加；以算子的第三个输出作为新的残差。",
         "mechanical": True},
        {"id": "first_layer_plain_norm",
         "en": "The first layer's input norm has no pending add: keep npu_rms_norm there (or pass a zero residual).",
         "zh": "第一层的输入norm之前没有待融合的加法：该处保留npu_rms_norm（或传入全零残差）。",
         "mechanical": True, "seam": "into_next_layer"},
    ],
    "checks": ["npu_add_rms_norm:*"],
    "facts": {},
    "hints": {"class_names": ["DecoderLayer"]},
    "inputs": {
        "residual": {"shape": ["B", "S", "H"], "dtype": "act"},
        "hidden_states": {"shape": ["B", "S", "H"], "dtype": "act"},
        "weight": {"shape": ["H"], "dtype": "act", "init": "ones_noise"},
        "eps": {"dtype": "param", "value": 1e-6},
    },
    "sizes": {"B": 2, "S": 5, "H": 64},
    "dtypes": ["float32", "bfloat16"],
    "min_torch": {"search_f_rms_norm": "2.4"},
    "match": {"anchor_uses": [{"anchor": 1, "allow": ["add", "return"]}],
              "across_layers": True,
              "not_from": {"weight": ["add", "sub", "rsqrt", "sqrt", "div"]},
              "explain": [{"when": "is also read by", "near_miss": "fixtures/add_rms_norm_nomatch_sum_reused.py"}]},
    "near_misses": [
        {"file": "fixtures/add_rms_norm_nomatch_sum_reused.py",
         "reason": "the sum is read by another consumer besides the norm and the next residual"},
    ],
    "doc_zh": """残差相加后接RMSNorm，替换为一次npu_add_rms_norm调用。

功能
    识别h = residual + x，且其和既被RMSNorm（展开写法，或DeepSeek的Block中的F.rms_norm）
    归一化、又作为下一个残差继续使用的写法。
    建议改为y, _, residual = torch_npu.npu_add_rms_norm(residual, x, w, eps)：第三个输出
    就是该和，在本层后续部分替代残差。
原因
    加法和归一化各自完整读写一遍隐藏状态；融合算子一次读取两个输入，同时写出归一化结果
    和求和结果。每个解码层有两处（注意力前和MLP前），两个阶段都适用。
示例
    hidden_states = residual + hidden_states
    residual = hidden_states
    hidden_states = self.post_attention_layernorm(hidden_states)
替代写法
    hidden_states, _, residual = torch_npu.npu_add_rms_norm(
        residual, hidden_states, self.post_attention_layernorm.weight,
        self.post_attention_layernorm.variance_epsilon)
修复安全性
    需要前置改造。加法和归一化位于不同语句（常跨越注意力块），改写须在层内串联残差：该和
    除了norm和下一次残差相加之外不能有其他使用者。第一层的输入norm之前没有待融合的加法，
    保留普通npu_rms_norm（norm.rms_norm）或传入全零残差。融合算子在float32中相加后再舍入，
    HF代码先舍入求和结果：bf16下差一个最小精度单位。
    在相加之前先乘以常数的分支（Granite的residual_multiplier）保留其乘法，融合算子对乘后的值做加法。
参考
    catalog/norm/npu_add_rms_norm.toml；pitfalls.md 5.2（三元组，第三个输出为新残差）；
    reference_chains.md module-attention-gqa。
""",
}


def search(residual, hidden_states, weight, eps):
    summed = residual + hidden_states
    h32 = summed.to(torch.float32)
    h32 = h32 * torch.rsqrt(h32.pow(2).mean(-1, keepdim=True) + eps)
    return weight * h32.to(summed.dtype), summed


def search_add_in_call(residual, hidden_states, weight, eps):
    h = hidden_states + residual
    x = h.float()
    x = x / torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + eps)
    return x.type_as(h) * weight, h


def search_f_rms_norm(residual, hidden_states, weight, eps):
    summed = residual + hidden_states
    return F.rms_norm(summed, (summed.shape[-1],), weight, eps), summed


def replace(residual, hidden_states, weight, eps):
    normed, _, residual = torch_npu.npu_add_rms_norm(residual, hidden_states, weight, eps)
    return normed, residual


def naive_first_output_as_residual(residual, hidden_states, weight, eps):
    # Carrying the normalised output on as the residual (outputs swapped) is a classic slip.
    normed, _, _ = torch_npu.npu_add_rms_norm(residual, hidden_states, weight, eps)
    return normed, normed
