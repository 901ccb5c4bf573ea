"""Half-split RoPE (`rotate_half`) on q and k becomes `npu_apply_rotary_pos_emb`.

What it does
    Finds `q * cos + rotate_half(q) * sin` (and the same for k), where `rotate_half`
    swaps the two halves of head_dim with a sign (`cat(-x2, x1)`): the NeoX/Llama
    convention. It proposes one `torch_npu.npu_apply_rotary_pos_emb(q, k, cos, sin,
    layout='BSND')` call for both tensors, which rotates them in place.
Why
    Each eager RoPE application is about ten element-wise kernels per tensor (two
    slices, a negation, a concat, two multiplies, an add, plus the broadcasts). The fused
    kernel does q and k in one launch. Every layer runs it in prefill and in decode.
Example
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    q_out = q * c + rotate_half(q) * s
    k_out = k * c + rotate_half(k) * s
Use instead
    # q, k as (B, S, N, D) before the head transpose, cos/sin as (B, S, 1, D): a table
    # the batch shares, (1, S, D), is expanded to B (A2/A3 take no batch axis of 1)
    q, k = torch_npu.npu_apply_rotary_pos_emb(q, k, cos.unsqueeze(2).expand(b, -1, -1, -1),
                                               sin.unsqueeze(2).expand(b, -1, -1, -1),
                                               layout='BSND')
Fix safety
    Safe under the checked conditions: head_dim 64 or 128 and equal for q, k, cos and
    sin (otherwise see rope.rope_half_rotary_mul or rope.rope_partial); q, k, cos and sin
    of one dtype; layout BSND or TND on A2/A3 (HF keeps q/k in BNSD, so the replacement
    either runs before the transpose or transposes around the call, which costs two
    copies). The operator works in place. Never map half mode to an interleave kernel
    (npu_interleave_rope, rotary_mode='interleave'): the pairs differ and the result
    silently changes; the numeric test shows it.
References
    catalog/rope/npu_apply_rotary_pos_emb.toml; pitfalls.md 4.1, 4.2;
    expert_choices_devset.json llama must / must_not.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "rope.rope_half",
    "title": "half-split RoPE (rotate_half) on q, k -> npu_apply_rotary_pos_emb (BSND/TND)",
    "module": "rope",
    "apis": ["npu_apply_rotary_pos_emb"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_apply_rotary_pos_emb:*"],
    "facts": {"rotary_mode": "half", "layout": "BSND"},
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
    "sizes": {"B": 2, "N": 4, "KVN": 2, "S": 5, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"lookalikes": {"lookalike_adjacent_pairs": "fixtures/rope_half_nomatch_interleaved_pairs.py",
                             "lookalike_sign_flipped": "fixtures/rope_half_nomatch_sign_flipped.py"}},
    "near_misses": [
        {"file": "fixtures/rope_half_nomatch_interleaved_pairs.py",
         "reason": "the pairs are adjacent elements (x[..., ::2], x[..., 1::2]): interleaved RoPE, see rope.rope_interleave"},
        {"file": "fixtures/rope_half_nomatch_sign_flipped.py",
         "reason": "rotate_half negates the first half instead of the second: the rotation direction differs"},
    ],
    "doc_zh": """半分式RoPE（rotate_half）作用于q和k，替换为npu_apply_rotary_pos_emb。

功能
    识别q * cos + rotate_half(q) * sin（k同理），其中rotate_half把head_dim的两半带符号对调
    （cat(-x2, x1)），即NeoX/Llama约定。建议用一次torch_npu.npu_apply_rotary_pos_emb(q, k,
    cos, sin, layout='BSND')同时原地旋转两个张量。
原因
    eager方式每个张量约十个逐元素内核（两次切片、取负、拼接、两次乘法、加法及广播）；融合
    内核一次处理q和k。每层在预填充和解码阶段都会执行。
示例
    c, s = cos.unsqueeze(1), sin.unsqueeze(1)
    q_out = q * c + rotate_half(q) * s
    k_out = k * c + rotate_half(k) * s
替代写法
    # q、k为头转置之前的(B, S, N, D)，cos/sin为(B, S, 1, D)：
    # 整个batch共用的(1, S, D)表需展开到B（A2/A3不接受batch轴为1）
    q, k = torch_npu.npu_apply_rotary_pos_emb(q, k, cos.unsqueeze(2).expand(b, -1, -1, -1),
                                               sin.unsqueeze(2).expand(b, -1, -1, -1),
                                               layout='BSND')
修复安全性
    在检查条件下安全：head_dim为64或128，且q、k、cos、sin相同（否则见rope.rope_half_rotary_mul
    或rope.rope_partial）；q、k、cos、sin类型一致；A2/A3上布局为BSND或TND（HF中q/k为BNSD，
    因此替换要么放在转置之前，要么在调用前后转置，多两次拷贝）。算子原地修改。切勿把半分式
    映射到交错式内核（npu_interleave_rope、rotary_mode='interleave'）：配对方式不同，结果会
    静默改变，数值测试证明了这一点。
参考
    catalog/rope/npu_apply_rotary_pos_emb.toml；pitfalls.md 4.1、4.2；
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
    q_bsnd = q.transpose(1, 2).contiguous()
    k_bsnd = k.transpose(1, 2).contiguous()
    # (B, S, 1, D) with the queries' B: a table the batch shares (B = 1) is expanded, as A2/A3 need.
    c = cos.unsqueeze(2).expand(q_bsnd.shape[0], -1, -1, -1)
    s = sin.unsqueeze(2).expand(q_bsnd.shape[0], -1, -1, -1)
    torch_npu.npu_apply_rotary_pos_emb(q_bsnd, k_bsnd, c, s, layout="BSND")
    return q_bsnd.transpose(1, 2), k_bsnd.transpose(1, 2)


def naive_interleave_mode(q, k, cos, sin):
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    return (torch_npu.npu_rotary_mul(q, c, s, rotary_mode="interleave"),
            torch_npu.npu_rotary_mul(k, c, s, rotary_mode="interleave"))


def naive_interleave_rope(q, k, cos, sin):
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    return torch_npu.npu_interleave_rope(q, c, s), torch_npu.npu_interleave_rope(k, c, s)
