"""Half-split RoPE on `chunk` halves with half-width cos/sin tables becomes `npu_rotary_mul` with the tables doubled.

What it does
    Finds RoPE written on the two halves of the head (`x1, x2 = torch.chunk(x, 2, dim=-1)`,
    then `cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), -1)`) where cos and sin are
    already half as wide as the head (the rotary embedding keeps one angle per pair and
    never concatenates the table with itself: GPT-OSS and models derived from it). It
    proposes `torch_npu.npu_rotary_mul(x, cat((cos, cos), -1), cat((sin, sin), -1))` per
    tensor in the half mode.
Why
    The written-out rotation launches two chunks, four multiplies, a subtraction, an
    addition and a concatenation per tensor, each reading the tensor again; the fused
    kernel reads x once. It runs on q and k in every layer in both stages.
Example
    first_half, second_half = torch.chunk(x, 2, dim=-1)
    first_ = first_half * cos - second_half * sin
    second_ = second_half * cos + first_half * sin
    return torch.cat((first_, second_), dim=-1)
Use instead
    return torch_npu.npu_rotary_mul(x, torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1))
Fix safety
    Safe: the half mode pairs x[i] with x[i + D/2] and uses angle i for both, which is
    what the doubled table gives. The two concatenations are small ([.., S, D/2]); doubling
    the table once in the rotary embedding saves them. The checks cover D below 896 and
    even, the layout and B, N below 1000. A table already as wide as the head (sliced
    with `cos[..., :D/2]` before use) is rope.rope_half_split_rotary_mul.
References
    catalog/rope/npu_rotary_mul.toml; rope.rope_half_split_rotary_mul; pitfalls.md 4.3.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "rope.rope_half_chunk_table",
    "title": "half-split RoPE on chunk halves with half-width cos/sin -> npu_rotary_mul with cat((cos, cos))",
    "module": "rope",
    "apis": ["npu_rotary_mul"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_rotary_mul:*"],
    "facts": {"rotary_mode": "half", "layout": "BNSD"},
    "rejects": [
        {"api": "npu_interleave_rope",
         "en": "npu_interleave_rope rotates adjacent pairs (x[2i], x[2i+1]); this chain pairs x[i] with x[i + D/2]: different q/k, silently.",
         "zh": "npu_interleave_rope旋转相邻元素对(x[2i], x[2i+1])，本链把x[i]与x[i + D/2]配对：q/k被静默改变。",
         "needs": "a half-mode operator: npu_rotary_mul(rotary_mode='half') with the half-width tables doubled"},
    ],
    "inputs": {
        "q": {"shape": ["B", "N", "S", "D"], "dtype": "act"},
        "k": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "cos": {"shape": ["B", 1, "S", "D // 2"], "dtype": "act", "init": "uniform"},
        "sin": {"shape": ["B", 1, "S", "D // 2"], "dtype": "act", "init": "uniform"},
    },
    "sizes": {"B": 2, "N": 4, "KVN": 2, "S": 5, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"partial_returns": True,
              "not_from": {"cos": ["getitem"], "sin": ["getitem"]},
              "explain": [{"when": "expected add(...), found sub",
                           "near_miss": "fixtures/rope_half_chunk_table_nomatch_reverse_rotation.py"}]},
    "near_misses": [
        {"file": "fixtures/rope_half_chunk_table_nomatch_reverse_rotation.py",
         "reason": "both halves subtract (x2 * c - x1 * s): the rotation runs the other way, not RoPE's"},
    ],
    "doc_zh": """在chunk拆出的两半上书写、cos/sin只有一半宽度的半分式RoPE，替换为表格加倍后的npu_rotary_mul。

功能
    识别在head两半上书写的RoPE（x1, x2 = torch.chunk(x, 2, dim=-1)，再
    cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), -1)），其中cos与sin本身只有head的一半宽
    （旋转位置编码每对只保留一个角度，从不把表格与自身拼接：GPT-OSS及其衍生模型）。建议对每个
    张量使用半分模式的torch_npu.npu_rotary_mul(x, cat((cos, cos), -1), cat((sin, sin), -1))。
原因
    展开写法对每个张量要启动两次chunk、四次乘法、一次减法、一次加法和一次拼接，每次都重新读一遍
    张量；融合算子只读一次x。它在每层的q和k上、两个阶段都要运行。
示例
    first_half, second_half = torch.chunk(x, 2, dim=-1)
    first_ = first_half * cos - second_half * sin
    second_ = second_half * cos + first_half * sin
    return torch.cat((first_, second_), dim=-1)
替代写法
    return torch_npu.npu_rotary_mul(x, torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1))
修复安全性
    安全：半分模式把x[i]与x[i + D/2]配对，两者都用角度i，这正是加倍后的表格所给出的。两次拼接
    很小（[.., S, D/2]）；在旋转位置编码中一次性把表格加倍可以省去它们。检查覆盖D小于896且为偶数、
    布局以及B、N小于1000。使用前已用cos[..., :D/2]切片、与head等宽的表格属于
    rope.rope_half_split_rotary_mul。
参考
    catalog/rope/npu_rotary_mul.toml；rope.rope_half_split_rotary_mul；pitfalls.md 4.3。
""",
}


def search(q, k, cos, sin):
    q1, q2 = torch.chunk(q, 2, dim=-1)
    k1, k2 = torch.chunk(k, 2, dim=-1)
    q_out = torch.cat((q1 * cos - q2 * sin, q2 * cos + q1 * sin), dim=-1)
    k_out = torch.cat((k1 * cos - k2 * sin, k2 * cos + k1 * sin), dim=-1)
    return q_out, k_out


def replace(q, k, cos, sin):
    # One table pair per tensor, so a match on one of the two keeps only its own statements.
    qc, qs = torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)
    kc, ks = torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)
    return torch_npu.npu_rotary_mul(q, qc, qs), torch_npu.npu_rotary_mul(k, kc, ks)


def naive_half_table_as_is(q, k, cos, sin):
    # The half-width table padded with zeros instead of doubled: the second half is never rotated.
    qc, qs = torch.cat((cos, torch.ones_like(cos)), dim=-1), torch.cat((sin, torch.zeros_like(sin)), dim=-1)
    kc, ks = torch.cat((cos, torch.ones_like(cos)), dim=-1), torch.cat((sin, torch.zeros_like(sin)), dim=-1)
    return torch_npu.npu_rotary_mul(q, qc, qs), torch_npu.npu_rotary_mul(k, kc, ks)
