"""Interleaved (GPT-J style, even/odd pairs) RoPE becomes `npu_rotary_mul(rotary_mode='interleave')`.

What it does
    Finds RoPE that rotates adjacent pairs `(x[2i], x[2i+1])`: a pair rotation built
    with `stack((-x[..., 1::2], x[..., ::2]), -1).flatten(-2)`, or the explicit even/odd
    formula, with cos/sin of width D/2 repeated element-wise (`repeat_interleave(.., 2)`).
    It proposes `torch_npu.npu_rotary_mul(x, cos2, sin2, rotary_mode='interleave')` per
    tensor, with `cos2 = repeat_interleave(cos, 2, -1)`.
Why
    The even/odd spelling costs two strided gathers, a stack and a flatten per tensor on
    top of the multiplies; the fused kernel reads x once. GPT-J, CodeGen, GLM and the MLA
    rope part of DeepSeek use this convention.
Example
    c = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
    s = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
    return x * c + pair_turn(x) * s
Use instead
    cos2 = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
    sin2 = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
    return torch_npu.npu_rotary_mul(x, cos2, sin2, rotary_mode='interleave')
Fix safety
    Safe under the checked conditions: D even and below 896, B*N below 1000 for the
    interleave mode on A2/A3, layout BNSD/BSND/SBND/TND. `npu_interleave_rope` fits only
    D = 64 with cos/sin N = 1 and writes its output de-interleaved (even elements first):
    right for the DeepSeek form that de-interleaves itself (rope.rope_deinterleave_half),
    not element-for-element here. Never map an interleaved RoPE to a half-mode kernel.
References
    catalog/rope/npu_rotary_mul.toml; pitfalls.md 4.2, 4.3, 4.4.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "rope.rope_interleave",
    "title": "interleaved (even/odd pair) RoPE -> npu_rotary_mul(rotary_mode='interleave')",
    "module": "rope",
    "apis": ["npu_rotary_mul"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_rotary_mul:*"],
    "facts": {"rotary_mode": "interleave", "layout": "BSND"},
    "rejects": [
        {"api": "npu_apply_rotary_pos_emb",
         "en": "npu_apply_rotary_pos_emb supports only the half mode on A2/A3; applied to interleaved RoPE it pairs x[i] with x[i + D/2] and silently changes q/k.",
         "zh": "npu_apply_rotary_pos_emb在A2/A3上只支持half模式；用于交错式RoPE会把x[i]与x[i + D/2]配对，静默改变q/k。",
         "needs": "an interleave-mode operator: npu_rotary_mul(rotary_mode='interleave'), or npu_interleave_rope when D = 64 and the output order is de-interleaved on both q and k"},
    ],
    "inputs": {
        "q": {"shape": ["B", "S", "N", "D"], "dtype": "act"},
        "k": {"shape": ["B", "S", "KVN", "D"], "dtype": "act"},
        "cos": {"shape": ["B", "S", "D // 2"], "dtype": "act", "init": "uniform"},
        "sin": {"shape": ["B", "S", "D // 2"], "dtype": "act", "init": "uniform"},
    },
    "sizes": {"B": 2, "S": 5, "N": 4, "KVN": 2, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"partial_returns": True,
              "lookalikes": {"lookalike_half_split": "fixtures/rope_interleave_nomatch_half_split.py",
                             "lookalike_half_split_chunk": "fixtures/rope_interleave_nomatch_half_split.py",
                             "lookalike_cos_concatenated": "fixtures/rope_interleave_nomatch_cos_not_repeated.py"}},
    "near_misses": [
        {"file": "fixtures/rope_interleave_nomatch_half_split.py",
         "reason": "pairs x[i] with x[i + D/2] (rotate_half): half-mode RoPE, see rope.rope_half"},
        {"file": "fixtures/rope_interleave_nomatch_cos_not_repeated.py",
         "reason": "cos/sin are concatenated (cat(c, c)) instead of repeated element-wise: the pairs see different angles than the interleave kernel assumes"},
    ],
    "doc_zh": """交错式（GPT-J风格，奇偶配对）RoPE替换为npu_rotary_mul(rotary_mode='interleave')。

功能
    识别旋转相邻元素对(x[2i], x[2i+1])的RoPE：用stack((-x[..., 1::2], x[..., ::2]), -1)
    .flatten(-2)构造的相邻元素对旋转，或显式奇偶公式，cos/sin宽度为D/2并逐元素重复
    （repeat_interleave(.., 2)）。建议对每个张量调用torch_npu.npu_rotary_mul(x, cos2, sin2,
    rotary_mode='interleave')，其中cos2 = repeat_interleave(cos, 2, -1)。
原因
    奇偶写法在乘法之外还要两次跨步取数、一次stack和flatten；融合内核只读一次x。GPT-J、
    CodeGen、GLM以及DeepSeek MLA的rope部分都使用此约定。
示例
    c = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
    s = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
    return x * c + pair_turn(x) * s
替代写法
    cos2 = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
    sin2 = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
    return torch_npu.npu_rotary_mul(x, cos2, sin2, rotary_mode='interleave')
修复安全性
    在检查条件下安全：D为偶数且小于896，A2/A3上interleave模式B*N小于1000，布局为
    BNSD/BSND/SBND/TND。npu_interleave_rope只适用于D = 64且cos/sin的N = 1，并且输出为解交错
    顺序（偶数元素在前）：适合自身先解交错的DeepSeek写法（rope.rope_deinterleave_half），
    此处不能逐元素替换。切勿把交错式RoPE映射到half模式内核。
参考
    catalog/rope/npu_rotary_mul.toml；pitfalls.md 4.2、4.3、4.4。
""",
}


def search(q, k, cos, sin):
    c = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
    s = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
    q_turned = torch.stack((-q[..., 1::2], q[..., ::2]), dim=-1).flatten(-2)
    k_turned = torch.stack((-k[..., 1::2], k[..., ::2]), dim=-1).flatten(-2)
    return q * c + q_turned * s, k * c + k_turned * s



def search_last_axis(q, k, cos, sin):
    # The repeat along the last axis named as -1 (a model that never fixes the rank).
    c = cos[:, :, None, :].repeat_interleave(2, dim=-1)
    s = sin[:, :, None, :].repeat_interleave(2, dim=-1)
    q_turned = torch.stack((-q[..., 1::2], q[..., ::2]), dim=-1).flatten(-2)
    k_turned = torch.stack((-k[..., 1::2], k[..., ::2]), dim=-1).flatten(-2)
    return q * c + q_turned * s, k * c + k_turned * s

def search_even_odd(q, k, cos, sin):
    c = cos.unsqueeze(2)
    s = sin.unsqueeze(2)
    q_even = q[..., 0::2]
    q_odd = q[..., 1::2]
    k_even = k[..., 0::2]
    k_odd = k[..., 1::2]
    q_out = torch.stack((q_even * c - q_odd * s, q_even * s + q_odd * c), dim=-1).flatten(-2)
    k_out = torch.stack((k_even * c - k_odd * s, k_even * s + k_odd * c), dim=-1).flatten(-2)
    return q_out, k_out


def lookalike_half_split(q, k, cos, sin):
    # rotate_half pairs x[i] with x[i + D/2]; cos/sin then span the whole head
    q_mid = q.shape[-1] // 2
    k_mid = k.shape[-1] // 2
    q_turned = torch.cat((-q[..., q_mid:], q[..., :q_mid]), dim=-1)
    k_turned = torch.cat((-k[..., k_mid:], k[..., :k_mid]), dim=-1)
    return q * cos + q_turned * sin, k * cos + k_turned * sin


def lookalike_half_split_chunk(q, k, cos, sin):
    qa, qb = q.chunk(2, dim=-1)
    ka, kb = k.chunk(2, dim=-1)
    return q * cos + torch.cat((-qb, qa), dim=-1) * sin, k * cos + torch.cat((-kb, ka), dim=-1) * sin


def lookalike_cos_concatenated(q, k, cos, sin):
    # the table doubled by cat: angle j then serves pairs j and j + D/4, not pair j alone
    c = torch.cat((cos, cos), dim=-1)[:, :, None, :]
    s = torch.cat((sin, sin), dim=-1)[:, :, None, :]
    q_turned = torch.stack((-q[..., 1::2], q[..., ::2]), dim=-1).flatten(-2)
    k_turned = torch.stack((-k[..., 1::2], k[..., ::2]), dim=-1).flatten(-2)
    return q * c + q_turned * s, k * c + k_turned * s


def replace(q, k, cos, sin):
    cos2 = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
    sin2 = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
    return (torch_npu.npu_rotary_mul(q, cos2, sin2, rotary_mode="interleave"),
            torch_npu.npu_rotary_mul(k, cos2, sin2, rotary_mode="interleave"))


def naive_half_mode(q, k, cos, sin):
    cos2 = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
    sin2 = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
    return torch_npu.npu_rotary_mul(q, cos2, sin2), torch_npu.npu_rotary_mul(k, cos2, sin2)
