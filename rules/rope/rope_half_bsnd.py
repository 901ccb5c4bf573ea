"""Half-split RoPE on q and k kept as (B, S, N, D) becomes `npu_apply_rotary_pos_emb` with no transpose.

What it does
    Finds `q * cos + rotate_half(q) * sin` (and the same for k) where cos/sin get their
    head axis at position 2 (`cos.unsqueeze(2)`, `cos[:, :, None, :]`): q and k are still
    in the projection's (B, S, N, D) layout, as in vLLM-style and MoE model code that
    applies RoPE before any head transpose. It proposes one
    `torch_npu.npu_apply_rotary_pos_emb(q, k, cos, sin, layout='BSND')` call that rotates
    both tensors in place, with no layout change around it.
Why
    The eager form costs about ten element-wise kernels per tensor (slices, negation,
    concat, two multiplies, add and the broadcasts); the fused kernel does q and k in
    one launch. BSND is the operator's own layout, so unlike HF's BNSD tensors
    (rope.rope_half) nothing is copied before or after the call. It runs in every layer,
    in prefill and in decode.
Example
    c, s = cos.unsqueeze(2), sin.unsqueeze(2)
    q_out = q * c + rotate_half(q) * s
    k_out = k * c + rotate_half(k) * s
Use instead
    # q, k as (B, S, N, D), cos/sin as (B, S, 1, D): a table
    # the batch shares, (1, S, D), is expanded to B (A2/A3 take no batch axis of 1)
    q, k = torch_npu.npu_apply_rotary_pos_emb(q, k, cos.unsqueeze(2).expand(b, -1, -1, -1),
                                               sin.unsqueeze(2).expand(b, -1, -1, -1),
                                               layout='BSND')
Fix safety
    Safe under the checked conditions: head_dim 64 or 128 and equal for q, k, cos and
    sin (otherwise rope.rope_half_rotary_mul or rope.rope_partial apply); q, k, cos and
    sin of one dtype. The operator works in place: q and k are overwritten, so a model
    that reads the unrotated q or k afterwards needs a copy first. Never map half mode
    to an interleave kernel (npu_interleave_rope, rotary_mode='interleave'): the pairs
    differ and the numbers silently change.
References
    catalog/rope/npu_apply_rotary_pos_emb.toml; pitfalls.md 4.1, 4.2;
    rope.rope_half for the BNSD form.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "rope.rope_half_bsnd",
    "title": "half-split RoPE on (B, S, N, D) q, k -> npu_apply_rotary_pos_emb (BSND, no transpose)",
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
    "hints": {"class_names": ["RotaryEmbedding"]},
    "inputs": {
        "q": {"shape": ["B", "S", "N", "D"], "dtype": "act"},
        "k": {"shape": ["B", "S", "KVN", "D"], "dtype": "act"},
        "cos": {"shape": ["B", "S", "D"], "dtype": "act", "init": "uniform"},
        "sin": {"shape": ["B", "S", "D"], "dtype": "act", "init": "uniform"},
    },
    "sizes": {"B": 2, "S": 5, "N": 4, "KVN": 2, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"lookalikes": {"lookalike_sign_flipped": "fixtures/rope_half_bsnd_nomatch_sign_flipped.py"}},
    "near_misses": [
        {"file": "fixtures/rope_half_bsnd_nomatch_sign_flipped.py",
         "reason": "rotate_half negates the first half instead of the second: the rotation direction differs"},
    ],
    "doc_zh": """q、k保持(B, S, N, D)布局时的半分式RoPE，替换为无需转置的npu_apply_rotary_pos_emb。

功能
    识别q * cos + rotate_half(q) * sin（k同理），且cos/sin在第2维插入head轴
    （cos.unsqueeze(2)、cos[:, :, None, :]）：q、k仍是投影输出的(B, S, N, D)布局，
    常见于vLLM风格及在头转置之前做RoPE的MoE模型代码。建议用一次
    torch_npu.npu_apply_rotary_pos_emb(q, k, cos, sin, layout='BSND')原地旋转两个张量，
    前后无需任何布局变换。
原因
    eager方式每个张量约十个逐元素内核（切片、取负、拼接、两次乘法、加法及广播）；融合内核
    一次处理q和k。BSND正是该算子的原生布局，因此与HF的BNSD张量（rope.rope_half）不同，
    调用前后无需拷贝。每层在预填充和解码阶段都会执行。
示例
    c, s = cos.unsqueeze(2), sin.unsqueeze(2)
    q_out = q * c + rotate_half(q) * s
    k_out = k * c + rotate_half(k) * s
替代写法
    # q、k为(B, S, N, D)，cos/sin为(B, S, 1, D)：
    # 整个batch共用的(1, S, D)表需展开到B（A2/A3不接受batch轴为1）
    q, k = torch_npu.npu_apply_rotary_pos_emb(q, k, cos.unsqueeze(2).expand(b, -1, -1, -1),
                                               sin.unsqueeze(2).expand(b, -1, -1, -1),
                                               layout='BSND')
修复安全性
    在检查条件下安全：head_dim为64或128，且q、k、cos、sin相同（否则适用
    rope.rope_half_rotary_mul或rope.rope_partial）；q、k、cos、sin类型一致。算子原地修改
    q和k，若模型之后还读取未旋转的q或k，需先复制。切勿把半分式映射到交错式内核
    （npu_interleave_rope、rotary_mode='interleave'）：配对方式不同，数值会静默改变。
参考
    catalog/rope/npu_apply_rotary_pos_emb.toml；pitfalls.md 4.1、4.2；
    BNSD形式见rope.rope_half。
""",
}


def search(q, k, cos, sin):
    c = cos.unsqueeze(2)
    s = sin.unsqueeze(2)
    q_mid = q.shape[-1] // 2
    k_mid = k.shape[-1] // 2
    q_turned = torch.cat((-q[..., q_mid:], q[..., :q_mid]), dim=-1)
    k_turned = torch.cat((-k[..., k_mid:], k[..., :k_mid]), dim=-1)
    return q * c + q_turned * s, k * c + k_turned * s


def search_chunk(q, k, cos, sin):
    c = cos[:, :, None, :]
    s = sin[:, :, None, :]
    qa, qb = q.chunk(2, dim=-1)
    ka, kb = k.chunk(2, dim=-1)
    return q * c + torch.cat([-qb, qa], dim=-1) * s, k * c + torch.cat([-kb, ka], dim=-1) * s


def search_float_compute(q, k, cos, sin):
    c = cos.unsqueeze(-2).float()
    s = sin.unsqueeze(-2).float()
    qf = q.float()
    kf = k.float()
    q_half = qf.shape[-1] // 2
    k_half = kf.shape[-1] // 2
    q_rot = torch.cat((-qf[..., q_half:], qf[..., :q_half]), dim=-1)
    k_rot = torch.cat((-kf[..., k_half:], kf[..., :k_half]), dim=-1)
    return (qf * c + q_rot * s).type_as(q), (kf * c + k_rot * s).type_as(k)


def lookalike_sign_flipped(q, k, cos, sin):
    # cat(x2, -x1): the inverse rotation
    c = cos.unsqueeze(2)
    s = sin.unsqueeze(2)
    q_mid = q.shape[-1] // 2
    k_mid = k.shape[-1] // 2
    q_turned = torch.cat((q[..., q_mid:], -q[..., :q_mid]), dim=-1)
    k_turned = torch.cat((k[..., k_mid:], -k[..., :k_mid]), dim=-1)
    return q * c + q_turned * s, k * c + k_turned * s


def replace(q, k, cos, sin):
    q = q.contiguous()
    k = k.contiguous()
    # (B, S, 1, D) with the queries' B: a table the batch shares (B = 1) is expanded, as A2/A3 need.
    c = cos.unsqueeze(2).expand(q.shape[0], -1, -1, -1)
    s = sin.unsqueeze(2).expand(q.shape[0], -1, -1, -1)
    torch_npu.npu_apply_rotary_pos_emb(q, k, c, s, layout="BSND")
    return q, k


def naive_interleave_rope(q, k, cos, sin):
    c = cos.unsqueeze(2)
    s = sin.unsqueeze(2)
    return torch_npu.npu_interleave_rope(q, c, s), torch_npu.npu_interleave_rope(k, c, s)
