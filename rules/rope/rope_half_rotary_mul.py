"""Half-split RoPE (`rotate_half`) becomes `npu_rotary_mul` where npu_apply_rotary_pos_emb does not fit.

What it does
    Finds `q * cos + rotate_half(q) * sin` (and the same for k), where `rotate_half`
    swaps the two halves of head_dim with a sign (`cat(-x2, x1)`): the NeoX/Llama
    convention. It proposes `torch_npu.npu_rotary_mul(x, cos, sin)` (rotary_mode 'half')
    per tensor, in the layout the model already uses (BNSD, BSND, SBND or TND).
Why
    Each eager RoPE application is about ten element-wise kernels per tensor (two
    slices, a negation, a concat, two multiplies, an add, plus the broadcasts); the fused
    kernel is one. It is the choice when npu_apply_rotary_pos_emb's conditions fail:
    head_dim other than 64/128 (any even D below 896), HF's BNSD tensors without a
    transpose, or cos/sin in another dtype on products with mixed-precision support.
Example
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    q_out = q * c + rotate_half(q) * s
    k_out = k * c + rotate_half(k) * s
Use instead
    q_embed = torch_npu.npu_rotary_mul(q, cos.unsqueeze(1), sin.unsqueeze(1))
    k_embed = torch_npu.npu_rotary_mul(k, cos.unsqueeze(1), sin.unsqueeze(1))
Fix safety
    Safe under the checked conditions: D even and below 896, B*N below 1000 for the
    half mode on A2/A3, layouts BNSD/BSND/SBND/TND, cos/sin broadcastable as
    (B|1, 1|S, 1|N, D). Prefer rope.rope_half (one call for q and k) when its
    conditions hold. Never map half mode to an interleave kernel
    (npu_interleave_rope, rotary_mode='interleave'): the pairs differ and the result
    silently changes; the numeric test shows it.
References
    catalog/rope/npu_rotary_mul.toml; pitfalls.md 4.1, 4.2, 4.4;
    expert_choices_devset.json llama must / must_not.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "rope.rope_half_rotary_mul",
    "title": "half-split RoPE (rotate_half) -> npu_rotary_mul per tensor (any D < 896, BNSD as is)",
    "module": "rope",
    "apis": ["npu_rotary_mul"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_rotary_mul:*"],
    "facts": {"rotary_mode": "half", "layout": "BNSD"},
    "rejects": [
        {"api": "npu_interleave_rope",
         "en": "npu_interleave_rope rotates adjacent pairs (x[2i], x[2i+1]); rotate_half pairs x[i] with x[i + D/2]: different q/k, silently.",
         "zh": "npu_interleave_rope旋转相邻元素对(x[2i], x[2i+1])，rotate_half则把x[i]与x[i + D/2]配对：q/k被静默改变。",
         "needs": "a half-mode operator: npu_apply_rotary_pos_emb or npu_rotary_mul(rotary_mode='half')"},
    ],
    "hints": {"class_names": ["RotaryEmbedding", "LlamaRotaryEmbedding"]},
    "inputs": {
        "q": {"shape": ["B", "N", "S", "D"], "dtype": "act"},
        "k": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "cos": {"shape": ["B", "S", "D"], "dtype": "act", "init": "uniform"},
        "sin": {"shape": ["B", "S", "D"], "dtype": "act", "init": "uniform"},
    },
    "sizes": {"B": 2, "N": 4, "KVN": 2, "S": 5, "D": 96},
    "dtypes": ["float32", "bfloat16"],
    "match": {"partial_returns": True,
              "lookalikes": {"lookalike_adjacent_pairs": "fixtures/rope_half_rotary_mul_nomatch_interleaved_pairs.py",
                             "lookalike_sign_flipped": "fixtures/rope_half_rotary_mul_nomatch_sign_flipped.py"}},
    "near_misses": [
        {"file": "fixtures/rope_half_rotary_mul_nomatch_interleaved_pairs.py",
         "reason": "the pairs are adjacent elements (x[..., ::2], x[..., 1::2]): interleaved RoPE, see rope.rope_interleave"},
        {"file": "fixtures/rope_half_rotary_mul_nomatch_sign_flipped.py",
         "reason": "rotate_half negates the first half instead of the second: the rotation direction differs"},
    ],
    "doc_zh": """半分式RoPE（rotate_half）在npu_apply_rotary_pos_emb不适用时替换为npu_rotary_mul。

功能
    识别q * cos + rotate_half(q) * sin（k同理），其中rotate_half把head_dim的两半带符号对调
    （cat(-x2, x1)），即NeoX/Llama约定。建议对每个张量调用torch_npu.npu_rotary_mul(x, cos, sin)
    （rotary_mode为'half'），沿用模型现有布局（BNSD、BSND、SBND或TND）。
原因
    eager方式每个张量约十个逐元素内核（两次切片、取负、拼接、两次乘法、加法及广播）；融合
    内核只需一个。当npu_apply_rotary_pos_emb的条件不满足时选用它：head_dim不是64/128（任意小于
    896的偶数D）、HF的BNSD张量不想转置，或在支持混合精度的产品上cos/sin类型不同。
示例
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    q_out = q * c + rotate_half(q) * s
    k_out = k * c + rotate_half(k) * s
替代写法
    q_embed = torch_npu.npu_rotary_mul(q, cos.unsqueeze(1), sin.unsqueeze(1))
    k_embed = torch_npu.npu_rotary_mul(k, cos.unsqueeze(1), sin.unsqueeze(1))
修复安全性
    在检查条件下安全：D为偶数且小于896，A2/A3上half模式B*N小于1000，布局为BNSD/BSND/SBND/TND，
    cos/sin可广播为(B|1, 1|S, 1|N, D)。条件满足时优先使用rope.rope_half（q、k一次调用）。切勿把半分式
    映射到交错式内核（npu_interleave_rope、rotary_mode='interleave'）：配对方式不同，结果会
    静默改变，数值测试证明了这一点。
参考
    catalog/rope/npu_rotary_mul.toml；pitfalls.md 4.1、4.2、4.4；
    expert_choices_devset.json llama的must / must_not。
""",
}


def search(q, k, cos, sin):
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    q_mid = q.shape[-1] // 2
    k_mid = k.shape[-1] // 2
    q_turned = torch.cat((-q[..., q_mid:], q[..., :q_mid]), dim=-1)
    k_turned = torch.cat((-k[..., k_mid:], k[..., :k_mid]), dim=-1)
    return q * c + q_turned * s, k * c + k_turned * s


def search_chunk(q, k, cos, sin):
    c = cos[:, None, :, :]
    s = sin[:, None, :, :]
    qa, qb = q.chunk(2, dim=-1)
    ka, kb = k.chunk(2, dim=-1)
    return q * c + torch.cat([-qb, qa], dim=-1) * s, k * c + torch.cat([-kb, ka], dim=-1) * s


def search_float_compute(q, k, cos, sin):
    c = cos.unsqueeze(1).float()
    s = sin.unsqueeze(1).float()
    qf = q.float()
    kf = k.float()
    q_half = qf.shape[-1] // 2
    k_half = kf.shape[-1] // 2
    q_rot = torch.cat((-qf[..., q_half:], qf[..., :q_half]), dim=-1)
    k_rot = torch.cat((-kf[..., k_half:], kf[..., :k_half]), dim=-1)
    return (qf * c + q_rot * s).type_as(q), (kf * c + k_rot * s).type_as(k)


def lookalike_adjacent_pairs(q, k, cos, sin):
    # GPT-J pairs: the rotation mixes x[2i] with x[2i+1]
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    q_turned = torch.stack((-q[..., 1::2], q[..., ::2]), dim=-1).flatten(-2)
    k_turned = torch.stack((-k[..., 1::2], k[..., ::2]), dim=-1).flatten(-2)
    return q * c + q_turned * s, k * c + k_turned * s


def lookalike_sign_flipped(q, k, cos, sin):
    # cat(x2, -x1): the inverse rotation
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    q_mid = q.shape[-1] // 2
    k_mid = k.shape[-1] // 2
    q_turned = torch.cat((q[..., q_mid:], -q[..., :q_mid]), dim=-1)
    k_turned = torch.cat((k[..., k_mid:], -k[..., :k_mid]), dim=-1)
    return q * c + q_turned * s, k * c + k_turned * s


def replace(q, k, cos, sin):
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    return torch_npu.npu_rotary_mul(q, c, s), torch_npu.npu_rotary_mul(k, c, s)


def naive_interleave_mode(q, k, cos, sin):
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    return (torch_npu.npu_rotary_mul(q, c, s, rotary_mode="interleave"),
            torch_npu.npu_rotary_mul(k, c, s, rotary_mode="interleave"))
