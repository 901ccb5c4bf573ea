"""Interleaved RoPE that re-spreads the first half of a cat-doubled table becomes `npu_rotary_mul(rotary_mode='interleave')`.

What it does
    Finds the GLM-style application: the rotary module hands over the usual
    `cat(freqs, freqs)` cos/sin, and the apply function takes their first half and spreads it
    element-wise (`c[..., :D // 2].repeat_interleave(2, dim=-1)`) before rotating adjacent
    pairs, `q * c + stack((-q[..., 1::2], q[..., ::2]), -1).flatten(-2) * s`. It proposes
    the same table preparation followed by
    `torch_npu.npu_rotary_mul(x, c, s, rotary_mode='interleave')` per tensor.
Why
    Each tensor otherwise costs two strided gathers, a negation, a stack, a flatten, two
    multiplies and an add (plus float32 casts in some models); the fused kernel reads x
    once. The table slice and repeat are kept as the model writes them (they are per
    position, not per head), so the call sees exactly the tables the chain multiplies by.
Example
    c = cos.unsqueeze(1)
    c = c[..., : c.shape[-1] // 2].repeat_interleave(2, dim=-1)
    return q * c + pair_turn(q) * s
Use instead
    c = cos.unsqueeze(1)
    c = c[..., : c.shape[-1] // 2].repeat_interleave(2, dim=-1)
    return torch_npu.npu_rotary_mul(q, c, s, rotary_mode='interleave')
Fix safety
    Needs a prerequisite: the interleave mode documents cos/sin only broadcast over batch
    and heads (11SD for BNSD x), while the HF tables carry the batch axis from
    position_ids; one row may be passed only when every sequence in the batch has the
    same positions. D even and below 896 and B*N below 1000 are checked. Where the model
    computes in float32 and casts back, the kernel rounds in the activation dtype instead
    (within the bfloat16 tolerance). The half-mode kernels (npu_apply_rotary_pos_emb,
    rotary_mode='half') pair other lanes and must not be used. A partial rotary variant
    (only the first lanes rotated) is rope.rope_interleave_half_table_partial.
References
    catalog/rope/npu_rotary_mul.toml (interleave formula, r1/r2 shapes); pitfalls.md 4.2.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "rope.rope_interleave_half_table",
    "title": "interleaved RoPE spreading the first half of a cat table (GLM style) -> npu_rotary_mul(rotary_mode='interleave')",
    "module": "rope",
    "apis": ["npu_rotary_mul"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "interleave_table_batch_one",
         "en": "npu_rotary_mul's interleave mode documents cos/sin only as 11SD (BNSD x) or 1S1D (BSND x); the model's tables carry a batch axis from position_ids. Pass a single row (cos[:1], sin[:1]) where every sequence in the batch uses the same positions, otherwise keep the eager form or call the operator per batch row.",
         "zh": "npu_rotary_mul的interleave模式文档只列出cos/sin为11SD（x为BNSD）或1S1D（x为BSND）；模型的cos/sin表由position_ids生成，带有batch维。只有当batch中每条序列的位置相同时才能只传一行（cos[:1]、sin[:1]），否则保留原写法或按batch逐行调用算子。",
         "mechanical": False},
    ],
    "checks": ["npu_rotary_mul:*"],
    "facts": {"rotary_mode": "interleave", "layout": "BNSD"},
    "rejects": [
        {"api": "npu_apply_rotary_pos_emb",
         "en": "npu_apply_rotary_pos_emb supports only the half mode on A2/A3; applied to adjacent-pair RoPE it pairs x[i] with x[i + D/2] and silently changes q/k.",
         "zh": "npu_apply_rotary_pos_emb在A2/A3上只支持half模式；用于相邻元素对的RoPE会把x[i]与x[i + D/2]配对，静默改变q/k。",
         "needs": "npu_rotary_mul(rotary_mode='interleave') on the spread tables"},
    ],
    "hints": {"class_names": ["RotaryEmbedding"]},
    "inputs": {
        "q": {"shape": ["B", "N", "S", "D"], "dtype": "act"},
        "k": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "cos": {"shape": ["B", "S", "D"], "dtype": "act", "init": "half_repeated"},
        "sin": {"shape": ["B", "S", "D"], "dtype": "act", "init": "half_repeated"},
    },
    "sizes": {"B": 2, "N": 4, "KVN": 2, "S": 5, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"partial_returns": True,
              "lookalikes": {"lookalike_reverse_turn": "fixtures/rope_interleave_half_table_nomatch_reverse_turn.py"}},
    "near_misses": [
        {"file": "fixtures/rope_interleave_half_table_nomatch_reverse_turn.py",
         "reason": "the pair turn negates the even element instead of the odd one (stack(x_odd, -x_even)): the rotation runs the other way"},
    ],
    "doc_zh": """把cat加倍表的前一半逐元素展开后做交错式RoPE的写法替换为npu_rotary_mul(rotary_mode='interleave')。

功能
    识别GLM风格的写法：旋转模块给出常见的cat(freqs, freqs)形式的cos/sin，应用函数取其前一半并
    逐元素展开（c[..., :D // 2].repeat_interleave(2, dim=-1)），再旋转相邻元素对：
    q * c + stack((-q[..., 1::2], q[..., ::2]), -1).flatten(-2) * s。建议保留同样的表准备，
    再对每个张量调用torch_npu.npu_rotary_mul(x, c, s, rotary_mode='interleave')。
原因
    否则每个张量需要两次跨步取数、取负、stack、flatten、两次乘法和一次加法（有的模型还有float32
    转换）；融合内核只读一次x。表的切片与展开按模型原样保留（只与位置有关，与head无关），因此
    算子看到的正是链中相乘的表。
示例
    c = cos.unsqueeze(1)
    c = c[..., : c.shape[-1] // 2].repeat_interleave(2, dim=-1)
    return q * c + pair_turn(q) * s
替代写法
    c = cos.unsqueeze(1)
    c = c[..., : c.shape[-1] // 2].repeat_interleave(2, dim=-1)
    return torch_npu.npu_rotary_mul(q, c, s, rotary_mode='interleave')
修复安全性
    需要前置条件：interleave模式文档只允许cos/sin在batch与head上完全广播（x为BNSD时为11SD），
    而HF的表由position_ids生成，带batch维；只有batch中每条序列位置相同时才能只传一行。D为偶数且
    小于896、B*N小于1000由检查项确认。模型在float32中计算再转回时，内核改为按激活dtype舍入
    （在bfloat16容差之内）。half模式内核（npu_apply_rotary_pos_emb、rotary_mode='half'）配对的
    元素不同，不得使用。只旋转前若干维的部分旋转写法见rope.rope_interleave_half_table_partial。
参考
    catalog/rope/npu_rotary_mul.toml（interleave公式、r1/r2形状）；pitfalls.md 4.2。
""",
}


def search(q, k, cos, sin):
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    c = c[..., : c.shape[-1] // 2].repeat_interleave(2, dim=-1)
    s = s[..., : s.shape[-1] // 2].repeat_interleave(2, dim=-1)
    q_turned = torch.stack((-q[..., 1::2], q[..., 0::2]), dim=-1).flatten(-2)
    k_turned = torch.stack((-k[..., 1::2], k[..., 0::2]), dim=-1).flatten(-2)
    return q * c + q_turned * s, k * c + k_turned * s


def search_open_start(q, k, cos, sin):
    # the even lanes spelled x[..., ::2] rather than x[..., 0::2]
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    c = c[..., : c.shape[-1] // 2].repeat_interleave(2, dim=-1)
    s = s[..., : s.shape[-1] // 2].repeat_interleave(2, dim=-1)
    q_turned = torch.stack((-q[..., 1::2], q[..., ::2]), dim=-1).flatten(-2)
    k_turned = torch.stack((-k[..., 1::2], k[..., ::2]), dim=-1).flatten(-2)
    return q * c + q_turned * s, k * c + k_turned * s


def search_float_compute(q, k, cos, sin):
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    c = c[..., : c.shape[-1] // 2].repeat_interleave(2, dim=-1)
    s = s[..., : s.shape[-1] // 2].repeat_interleave(2, dim=-1)
    q_turned = torch.stack((-q[..., 1::2], q[..., 0::2]), dim=-1).flatten(-2)
    k_turned = torch.stack((-k[..., 1::2], k[..., 0::2]), dim=-1).flatten(-2)
    q_out = q.float() * c + q_turned.float() * s
    k_out = k.float() * c + k_turned.float() * s
    return q_out.to(q.dtype), k_out.to(k.dtype)


def lookalike_reverse_turn(q, k, cos, sin):
    # stack(x_odd, -x_even): the inverse rotation of every pair
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    c = c[..., : c.shape[-1] // 2].repeat_interleave(2, dim=-1)
    s = s[..., : s.shape[-1] // 2].repeat_interleave(2, dim=-1)
    q_turned = torch.stack((q[..., 1::2], -q[..., 0::2]), dim=-1).flatten(-2)
    k_turned = torch.stack((k[..., 1::2], -k[..., 0::2]), dim=-1).flatten(-2)
    return q * c + q_turned * s, k * c + k_turned * s


def replace(q, k, cos, sin):
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    c = c[..., : c.shape[-1] // 2].repeat_interleave(2, dim=-1)
    s = s[..., : s.shape[-1] // 2].repeat_interleave(2, dim=-1)
    return (torch_npu.npu_rotary_mul(q, c, s, rotary_mode="interleave"),
            torch_npu.npu_rotary_mul(k, c, s, rotary_mode="interleave"))


def naive_half_mode_table_as_given(q, k, cos, sin):
    # the cat-doubled table passed straight to the half kernel: other pairs, other angles
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    return torch_npu.npu_rotary_mul(q, c, s), torch_npu.npu_rotary_mul(k, c, s)
