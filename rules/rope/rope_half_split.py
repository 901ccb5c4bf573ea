"""Half-split RoPE written on the two halves (`x1 * c - x2 * s`, `x2 * c + x1 * s`) becomes `npu_apply_rotary_pos_emb`.

What it does
    Finds the half-split (NeoX/Llama) rotation spelled without `rotate_half`: the
    head dim is split into halves x1, x2 (`chunk(2, -1)` or two slices), the first
    half of the cos/sin table is taken, and the result is
    `cat(x1 * c - x2 * s, x2 * c + x1 * s)`, for q and for k. This is the same pairing
    as `rotate_half` (x[i] with x[i + D/2]). It proposes one
    `torch_npu.npu_apply_rotary_pos_emb(q, k, cos, sin, layout='BSND')` call with the
    half table repeated to the full head dim.
Why
    Each application is about a dozen element-wise kernels per tensor (the split, four
    multiplies, an add, a subtract, a concat, the table slices). The fused kernel does q
    and k in one launch, every layer, in prefill and in decode.
Example
    x1, x2 = x.chunk(2, dim=-1)
    c, s = cos[..., : x1.shape[-1]], sin[..., : x1.shape[-1]]
    out = torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1)
Use instead
    # q, k as (B, S, N, D) with batch = B; the table's half repeated: cat(c, c) (most models build it so)
    half = q.shape[-1] // 2
    c = torch.cat((cos[..., :half], cos[..., :half]), dim=-1)[None, :, None, :].expand(batch, -1, -1, -1)
    s = torch.cat((sin[..., :half], sin[..., :half]), dim=-1)[None, :, None, :].expand(batch, -1, -1, -1)
    q, k = torch_npu.npu_apply_rotary_pos_emb(q, k, c, s, layout='BSND')
Fix safety
    Safe under the checked conditions: head_dim 64 or 128, q, k, cos and sin of one
    dtype, layout BSND or TND (q/k in BNSD are transposed around the call or the
    call moves before the head transpose). The chain reads only the first half of the
    table; a model building it as `cat(freqs, freqs)` (HF, Qwen) can pass it whole.
    Never map this to an interleave kernel (npu_interleave_rope,
    rotary_mode='interleave'): the pairs differ and the result silently changes.
References
    catalog/rope/npu_apply_rotary_pos_emb.toml; pitfalls.md 4.1, 4.2.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "rope.rope_half_split",
    "title": "half-split RoPE on explicit halves (x1*c - x2*s, x2*c + x1*s) -> npu_apply_rotary_pos_emb (BSND/TND)",
    "module": "rope",
    "apis": ["npu_apply_rotary_pos_emb"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_apply_rotary_pos_emb:*"],
    "facts": {"rotary_mode": "half", "layout": "BSND"},
    "rejects": [
        {"api": "npu_interleave_rope",
         "en": "npu_interleave_rope rotates adjacent pairs (x[2i], x[2i+1]); this chain pairs x[i] with x[i + D/2]: different q/k, silently.",
         "zh": "npu_interleave_rope旋转相邻元素对(x[2i], x[2i+1])，本链把x[i]与x[i + D/2]配对：q/k被静默改变。",
         "needs": "a half-mode operator: npu_apply_rotary_pos_emb or npu_rotary_mul(rotary_mode='half')"},
    ],
    "inputs": {
        "q": {"shape": ["B", "N", "S", "D"], "dtype": "act"},
        "k": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "cos": {"shape": ["S", "D"], "dtype": "act", "init": "uniform"},
        "sin": {"shape": ["S", "D"], "dtype": "act", "init": "uniform"},
    },
    "sizes": {"B": 2, "N": 4, "KVN": 2, "S": 5, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"partial_returns": True,
              "explain": [{"when": "expected add(...), found sub", "near_miss": "fixtures/rope_half_split_nomatch_reverse_rotation.py"}]},
    "near_misses": [
        {"file": "fixtures/rope_half_split_nomatch_reverse_rotation.py",
         "reason": "both halves subtract (x2 * c - x1 * s): the rotation runs the other way, not RoPE's"},
    ],
    "doc_zh": """在显式两半上书写的半分式RoPE（x1 * c - x2 * s，x2 * c + x1 * s）替换为npu_apply_rotary_pos_emb。

功能
    识别不经rotate_half书写的半分式（NeoX/Llama）旋转：head维分成两半x1、x2（chunk(2, -1)
    或两个切片），取cos/sin表的前一半，结果为cat(x1 * c - x2 * s, x2 * c + x1 * s)，
    q和k各一次。这与rotate_half的配对相同（x[i]与x[i + D/2]）。建议用前一半表重复到完整
    head维，调用一次torch_npu.npu_apply_rotary_pos_emb(q, k, cos, sin, layout='BSND')。
原因
    每次应用每个张量约十几个逐元素内核（切分、四次乘、一次加、一次减、拼接、表切片）。融合
    内核一次处理q和k，每层在预填充和解码中都会执行。
示例
    x1, x2 = x.chunk(2, dim=-1)
    c, s = cos[..., : x1.shape[-1]], sin[..., : x1.shape[-1]]
    out = torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1)
替代写法
    # q、k为(B, S, N, D)，batch = B；表的前一半重复：cat(c, c)（多数模型本来就这样构造）
    half = q.shape[-1] // 2
    c = torch.cat((cos[..., :half], cos[..., :half]), dim=-1)[None, :, None, :].expand(batch, -1, -1, -1)
    s = torch.cat((sin[..., :half], sin[..., :half]), dim=-1)[None, :, None, :].expand(batch, -1, -1, -1)
    q, k = torch_npu.npu_apply_rotary_pos_emb(q, k, c, s, layout='BSND')
修复安全性
    在所检查的条件下安全：head_dim为64或128，q、k、cos、sin数据类型一致，布局BSND或TND
    （BNSD的q/k需在调用前后转置，或把调用移到头转置之前）。该链只读表的前一半；以
    cat(freqs, freqs)构造表的模型（HF、Qwen）可以直接传入整表。切勿映射到交错内核
    （npu_interleave_rope、rotary_mode='interleave'）：配对不同，结果会静默改变。
参考
    catalog/rope/npu_apply_rotary_pos_emb.toml；pitfalls.md 4.1、4.2。
""",
}


def search(q, k, cos, sin):
    q1, q2 = q.chunk(2, dim=-1)
    k1, k2 = k.chunk(2, dim=-1)
    qc, qs = cos[..., : q1.shape[-1]], sin[..., : q1.shape[-1]]
    kc, ks = cos[..., : k1.shape[-1]], sin[..., : k1.shape[-1]]
    q_out = torch.cat((q1 * qc - q2 * qs, q2 * qc + q1 * qs), dim=-1)
    k_out = torch.cat((k1 * kc - k2 * ks, k2 * kc + k1 * ks), dim=-1)
    return q_out, k_out


def search_slices(q, k, cos, sin):
    qh = q.shape[-1] // 2
    kh = k.shape[-1] // 2
    q1, q2 = q[..., :qh], q[..., qh:]
    k1, k2 = k[..., :kh], k[..., kh:]
    qc, qs = cos[..., :qh], sin[..., :qh]
    kc, ks = cos[..., :kh], sin[..., :kh]
    q_out = torch.cat((q1 * qc - q2 * qs, q2 * qc + q1 * qs), dim=-1)
    k_out = torch.cat((k1 * kc - k2 * ks, k2 * kc + k1 * ks), dim=-1)
    return q_out, k_out


def replace(q, k, cos, sin):
    half = q.shape[-1] // 2
    c = torch.cat((cos[..., :half], cos[..., :half]), dim=-1)[None, :, None, :].expand(q.shape[0], -1, -1, -1)
    s = torch.cat((sin[..., :half], sin[..., :half]), dim=-1)[None, :, None, :].expand(q.shape[0], -1, -1, -1)
    q_bsnd = q.transpose(1, 2).contiguous()
    k_bsnd = k.transpose(1, 2).contiguous()
    torch_npu.npu_apply_rotary_pos_emb(q_bsnd, k_bsnd, c, s, layout="BSND")
    return q_bsnd.transpose(1, 2), k_bsnd.transpose(1, 2)


def naive_interleave_mode(q, k, cos, sin):
    half = q.shape[-1] // 2
    c = torch.cat((cos[..., :half], cos[..., :half]), dim=-1)
    s = torch.cat((sin[..., :half], sin[..., :half]), dim=-1)
    return (torch_npu.npu_rotary_mul(q, c, s, rotary_mode="interleave"),
            torch_npu.npu_rotary_mul(k, c, s, rotary_mode="interleave"))
