"""Half-split RoPE turned the other way (`cat(x2, -x1)`) becomes `npu_rotary_mul` with the sine negated.

What it does
    Finds `q * cos + turn(q) * sin` where `turn` swaps the halves of head_dim and negates
    the first one, `cat(x2, -x1)` (NanoChat's rotate_half), and the equivalent spelling
    `q * cos - rotate_half(q) * sin`. Since `cat(x2, -x1) = -cat(-x2, x1)`, this is the half
    mode of `npu_rotary_mul` with r2 = -sin; it proposes
    `torch_npu.npu_rotary_mul(x, cos, -sin)` per tensor, in the model's layout.
Why
    The eager form is two slices, a negation, a concat, two multiplies and an add per
    tensor; the fused kernel is one call, plus one negation of the shared table.
    Negating sin is exact in floating point, so the call computes the same numbers as the
    chain, not an approximation.
Example
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    h = q.shape[-1] // 2
    return q * c + torch.cat((q[..., h:], -q[..., :h]), dim=-1) * s
Use instead
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    return torch_npu.npu_rotary_mul(q, c, -s)
Fix safety
    Safe under the checked conditions: D even and below 896, B and N below 1000 for the
    half mode on A2/A3, layout BNSD/BSND/SBND/TND; half mode accepts cos/sin with a batch
    axis (B1SD for BNSD x). The negated sine stays within the [-1, 1] range the doc asks
    of r2. Passing sin unnegated (rope.rope_half_rotary_mul's call) rotates the other way,
    and the interleave mode pairs other lanes; the numeric test shows both differ.
References
    catalog/rope/npu_rotary_mul.toml (half formula: rotate(x) = cat(-x2, x1));
    pitfalls.md 4.2.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "rope.rope_half_reverse_rotary_mul",
    "title": "half-split RoPE turned the other way (cat(x2, -x1)) -> npu_rotary_mul with -sin",
    "module": "rope",
    "apis": ["npu_rotary_mul"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_rotary_mul:*"],
    "facts": {"rotary_mode": "half", "layout": "BNSD"},
    "rejects": [
        {"api": "npu_apply_rotary_pos_emb",
         "en": "npu_apply_rotary_pos_emb with the model's sin rotates by +angle where this model rotates by -angle: q/k change silently.",
         "zh": "npu_apply_rotary_pos_emb直接使用模型的sin时按+角度旋转，而该模型按-角度旋转：q/k会被静默改变。",
         "needs": "npu_rotary_mul(x, cos, -sin), or the same call with the negated sine"},
        {"api": "npu_interleave_rope",
         "en": "npu_interleave_rope rotates adjacent pairs; this chain pairs x[i] with x[i + D/2].",
         "zh": "npu_interleave_rope旋转相邻元素对；此链把x[i]与x[i + D/2]配对。",
         "needs": "a half-mode operator with the negated sine"},
    ],
    "hints": {"class_names": ["RotaryEmbedding"]},
    "inputs": {
        "q": {"shape": ["B", "N", "S", "D"], "dtype": "act"},
        "k": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "cos": {"shape": ["B", "S", "D"], "dtype": "act", "init": "uniform"},
        "sin": {"shape": ["B", "S", "D"], "dtype": "act", "init": "uniform"},
    },
    "sizes": {"B": 2, "N": 4, "KVN": 2, "S": 5, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"partial_returns": True,
              "lookalikes": {"lookalike_no_negation": "fixtures/rope_half_reverse_rotary_mul_nomatch_no_negation.py"}},
    "near_misses": [
        {"file": "fixtures/rope_half_reverse_rotary_mul_nomatch_no_negation.py",
         "reason": "the halves are swapped without negating either (cat(x2, x1)): not a rotation, no RoPE kernel computes it"},
    ],
    "doc_zh": """反向转动的半分式RoPE（cat(x2, -x1)）替换为sin取负的npu_rotary_mul。

功能
    识别q * cos + turn(q) * sin，其中turn对调head_dim的两半并对前一半取负：cat(x2, -x1)
    （NanoChat的rotate_half），以及等价写法q * cos - rotate_half(q) * sin。由于
    cat(x2, -x1) = -cat(-x2, x1)，这就是r2 = -sin时npu_rotary_mul的half模式；建议对每个张量
    调用torch_npu.npu_rotary_mul(x, cos, -sin)，沿用模型的布局。
原因
    eager写法每个张量需要两次切片、取负、拼接、两次乘法和一次加法；融合后每个张量一次调用，
    外加对共享表的一次取负。浮点取负是精确的，因此调用结果与原链逐元素相同，而不是近似。
示例
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    h = q.shape[-1] // 2
    return q * c + torch.cat((q[..., h:], -q[..., :h]), dim=-1) * s
替代写法
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    return torch_npu.npu_rotary_mul(q, c, -s)
修复安全性
    在检查条件下安全：D为偶数且小于896，A2/A3上half模式B与N小于1000，布局为BNSD/BSND/SBND/TND；
    half模式允许cos/sin带batch维（x为BNSD时为B1SD）。取负后的sin仍在文档要求的[-1, 1]范围内。
    不取负直接传sin（rope.rope_half_rotary_mul的调用）会反向旋转，interleave模式配对的元素也
    不同；数值测试表明两者结果都不同。
参考
    catalog/rope/npu_rotary_mul.toml（half公式：rotate(x) = cat(-x2, x1)）；pitfalls.md 4.2。
""",
}


def search(q, k, cos, sin):
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    q_mid = q.shape[-1] // 2
    k_mid = k.shape[-1] // 2
    q_turned = torch.cat((q[..., q_mid:], -q[..., :q_mid]), dim=-1)
    k_turned = torch.cat((k[..., k_mid:], -k[..., :k_mid]), dim=-1)
    return q * c + q_turned * s, k * c + k_turned * s


def search_chunk(q, k, cos, sin):
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    qa, qb = q.chunk(2, dim=-1)
    ka, kb = k.chunk(2, dim=-1)
    return q * c + torch.cat((qb, -qa), dim=-1) * s, k * c + torch.cat((kb, -ka), dim=-1) * s


def search_subtract(q, k, cos, sin):
    # the usual rotate_half, subtracted
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    q_mid = q.shape[-1] // 2
    k_mid = k.shape[-1] // 2
    q_turned = torch.cat((-q[..., q_mid:], q[..., :q_mid]), dim=-1)
    k_turned = torch.cat((-k[..., k_mid:], k[..., :k_mid]), dim=-1)
    return q * c - q_turned * s, k * c - k_turned * s


def lookalike_no_negation(q, k, cos, sin):
    # cat(x2, x1): a plain swap, no sign on either half
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    q_mid = q.shape[-1] // 2
    k_mid = k.shape[-1] // 2
    q_turned = torch.cat((q[..., q_mid:], q[..., :q_mid]), dim=-1)
    k_turned = torch.cat((k[..., k_mid:], k[..., :k_mid]), dim=-1)
    return q * c + q_turned * s, k * c + k_turned * s


def replace(q, k, cos, sin):
    c = cos.unsqueeze(1)
    s = -sin.unsqueeze(1)
    return torch_npu.npu_rotary_mul(q, c, s), torch_npu.npu_rotary_mul(k, c, s)


def naive_sin_as_given(q, k, cos, sin):
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    return torch_npu.npu_rotary_mul(q, c, s), torch_npu.npu_rotary_mul(k, c, s)
