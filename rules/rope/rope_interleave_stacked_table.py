"""Interleaved RoPE on a broadcast table, pairs turned with `stack(...).reshape_as(x)` (RoFormer), becomes `npu_rotary_mul(rotary_mode='interleave')`.

What it does
    Finds `x * cos + turn(x) * sin` for q and k (and a value rotated the same way, which
    is left to the same call) where `turn` rotates adjacent pairs written as
    `torch.stack([-x[..., 1::2], x[..., ::2]], dim=-1).reshape_as(x)` and cos/sin are
    full-width tables the model already broadcasts over batch and heads (RoFormer's
    sinusoidal table `[None, None, :, :]`, each frequency repeated for its pair by
    `stack([c, c], -1).reshape_as(...)`). It proposes
    `torch_npu.npu_rotary_mul(x, cos, sin, rotary_mode='interleave')` per tensor with
    the model's own tables.
Why
    The eager form is two strided gathers, a negation, a stack, a reshape, two multiplies
    and an add per tensor; the fused kernel reads x once. The operator's documented
    interleave formula, `x * cos + stack(-x_odd, x_even).flatten() * sin`, is this
    expression element for element for any table of width D, so the tables stay as
    they are.
Example
    turned = torch.stack([-q[..., 1::2], q[..., ::2]], dim=-1).reshape_as(q)
    q = q * cos_pos + turned * sin_pos
Use instead
    q = torch_npu.npu_rotary_mul(q, cos_pos, sin_pos, rotary_mode="interleave")
Fix safety
    Needs a prerequisite: on A2/A3 the interleave mode takes cos/sin only fully broadcast
    over batch and heads (11SD for a BNSD x); the engineer confirms the tables have that
    shape (RoFormer's do: one table for every row of the batch). D even and below 896
    and B*N below 1000 are checked. The half-pair operator npu_apply_rotary_pos_emb
    would pair x[i] with x[i + D/2] and is refused.
References
    catalog/rope/npu_rotary_mul.toml; pitfalls.md 4.2, 4.4; rules/rope/rope_interleave_rotary_mul.py.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "rope.rope_interleave_stacked_table",
    "title": "interleaved RoPE, pairs turned by stack(...).reshape_as(x), on a table broadcast over batch and heads (RoFormer) -> npu_rotary_mul(rotary_mode='interleave')",
    "module": "rope",
    "apis": ["npu_rotary_mul"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "interleave_table_broadcast",
         "en": "Pass cos/sin as (1, 1, S, D) tables for a (B, N, S, D) x: npu_rotary_mul's interleave mode on A2/A3 documents only fully broadcast tables. Confirm the model's tables carry no batch or head axis of their own.",
         "zh": "对(B, N, S, D)的x以(1, 1, S, D)形状传入cos/sin：A2/A3上npu_rotary_mul的interleave模式只支持完全广播的表。须确认模型的表没有自己的batch或head维。",
         "mechanical": False},
    ],
    "checks": ["npu_rotary_mul:*"],
    "facts": {"rotary_mode": "interleave", "layout": "BNSD"},
    "rejects": [
        {"api": "npu_apply_rotary_pos_emb",
         "en": "npu_apply_rotary_pos_emb supports only the half mode on A2/A3; applied to adjacent-pair RoPE it pairs x[i] with x[i + D/2] and silently changes q/k.",
         "zh": "npu_apply_rotary_pos_emb在A2/A3上只支持half模式；用于相邻元素对的RoPE会把x[i]与x[i + D/2]配对，静默改变q/k。",
         "needs": "npu_rotary_mul(rotary_mode='interleave') with the full-width tables"},
    ],
    "hints": {"class_names": ["RoFormerSelfAttention"]},
    "inputs": {
        "q": {"shape": ["B", "N", "S", "D"], "dtype": "act"},
        "k": {"shape": ["B", "N", "S", "D"], "dtype": "act"},
        "cos": {"shape": [1, 1, "S", "D"], "dtype": "act", "init": "uniform"},
        "sin": {"shape": [1, 1, "S", "D"], "dtype": "act", "init": "uniform"},
    },
    "sizes": {"B": 2, "N": 4, "S": 5, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"partial_returns": True,
              "lookalikes": {"lookalike_reverse_turn": "fixtures/rope_interleave_stacked_table_nomatch_reverse_turn.py"}},
    "near_misses": [
        {"file": "fixtures/rope_interleave_stacked_table_nomatch_reverse_turn.py",
         "reason": "the pair turn negates the even element instead of the odd one (stack([x_odd, -x_even])): the rotation runs the other way"},
    ],
    "doc_zh": """在广播表上的交错RoPE、相邻元素对以stack(...).reshape_as(x)旋转（RoFormer写法），替换为npu_rotary_mul(rotary_mode='interleave')。

功能
    识别q和k上的x * cos + turn(x) * sin（按同样方式旋转的value也可用同一调用），其中turn旋转
    相邻元素对，写作torch.stack([-x[..., 1::2], x[..., ::2]], dim=-1).reshape_as(x)，cos/sin是
    模型已在batch和head上广播的全宽表（RoFormer的正弦表[None, None, :, :]，每个频率经
    stack([c, c], -1).reshape_as(...)为其元素对重复）。建议对每个张量使用模型自己的表调用
    torch_npu.npu_rotary_mul(x, cos, sin, rotary_mode='interleave')。
原因
    eager写法每个张量需要两次跨步取数、取负、stack、reshape、两次乘法和一次加法；融合内核只读一次x。
    算子文档给出的interleave公式x * cos + stack(-x_odd, x_even).flatten() * sin对任意宽度为D的表
    都与该表达式逐元素相同，因此表保持不变。
示例
    turned = torch.stack([-q[..., 1::2], q[..., ::2]], dim=-1).reshape_as(q)
    q = q * cos_pos + turned * sin_pos
替代写法
    q = torch_npu.npu_rotary_mul(q, cos_pos, sin_pos, rotary_mode="interleave")
修复安全性
    需要一项前置确认：A2/A3上interleave模式只接受在batch和head上完全广播的cos/sin（x为BNSD时
    为11SD）；由工程师确认表具有该形状（RoFormer的表即如此：整个batch共用一张表）。D为偶数且
    小于896、B*N小于1000均会检查。半对算子npu_apply_rotary_pos_emb会把x[i]与x[i + D/2]配对，
    因此被拒绝。
参考
    catalog/rope/npu_rotary_mul.toml；pitfalls.md 4.2、4.4；rules/rope/rope_interleave_rotary_mul.py。
""",
}


def search(q, k, cos, sin):
    q_turned = torch.stack([-q[..., 1::2], q[..., ::2]], dim=-1).reshape_as(q)
    k_turned = torch.stack([-k[..., 1::2], k[..., ::2]], dim=-1).reshape_as(k)
    return q * cos + q_turned * sin, k * cos + k_turned * sin


def lookalike_reverse_turn(q, k, cos, sin):
    # stack([x_odd, -x_even]): the inverse rotation of every pair
    q_turned = torch.stack([q[..., 1::2], -q[..., ::2]], dim=-1).reshape_as(q)
    k_turned = torch.stack([k[..., 1::2], -k[..., ::2]], dim=-1).reshape_as(k)
    return q * cos + q_turned * sin, k * cos + k_turned * sin


def replace(q, k, cos, sin):
    return (torch_npu.npu_rotary_mul(q, cos, sin, rotary_mode="interleave"),
            torch_npu.npu_rotary_mul(k, cos, sin, rotary_mode="interleave"))


def naive_half_mode(q, k, cos, sin):
    return torch_npu.npu_rotary_mul(q, cos, sin), torch_npu.npu_rotary_mul(k, cos, sin)
