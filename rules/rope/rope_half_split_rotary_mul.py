"""Half-split RoPE on explicit halves, one tensor at a time, becomes `npu_rotary_mul` per tensor.

What it does
    Finds the half-split (NeoX) rotation spelled on the two halves of head_dim instead
    of with `rotate_half`: x1, x2 from `chunk(2, -1)` or two slices, the first half of
    the cos/sin table, `cat(x1 * c - x2 * s, x2 * c + x1 * s)`. Unlike rope.rope_half_split
    it also fits a helper that rotates one tensor per call (`q = rope(q, cos, sin)`,
    `k = rope(k, cos, sin)`): each call becomes one
    `torch_npu.npu_rotary_mul(x, c, s)` (rotary_mode 'half') with the half table repeated
    to the full head dim and padded with leading unit axes to the tensor's rank, which
    is how the eager code broadcast it.
Why
    The eager form is about a dozen element-wise kernels per tensor (the split, four
    multiplies, an add, a subtract, the concat, the table slices); the fused kernel is
    one launch per tensor, in every layer, in prefill and in decode. npu_apply_rotary_pos_emb
    would take q and k together, but a per-tensor helper gives it one of them at a
    time, and it wants BSND with head_dim 64 or 128.
Example
    a, b = x.chunk(2, dim=-1)
    c, s = cos[..., : a.shape[-1]], sin[..., : a.shape[-1]]
    return torch.cat((a * c - b * s, b * c + a * s), dim=-1)
Use instead
    h = x.shape[-1] // 2
    c = torch.cat((cos[..., :h], cos[..., :h]), dim=-1)
    s = torch.cat((sin[..., :h], sin[..., :h]), dim=-1)
    c = c.view((1,) * (x.dim() - c.dim()) + tuple(c.shape))   # (S, D) -> (1, 1, S, D)
    s = s.view((1,) * (x.dim() - s.dim()) + tuple(s.shape))
    return torch_npu.npu_rotary_mul(x, c, s)
Fix safety
    Safe under the checked conditions: head_dim even and below 896, B and N below 1000
    in half mode on A2/A3, x in BNSD, BSND, SBND or TND with the table broadcast as the
    operator lists for that layout (BNSD: 11SD, B1SD or BNSD). Only the first half of
    the table is read, as in the chain, so a half-width table works as well as a
    `cat(freqs, freqs)` one. Never map this pairing (x[i] with x[i + D/2]) to an
    interleave kernel: the result silently changes, as the numeric test shows.
References
    catalog/rope/npu_rotary_mul.toml; pitfalls.md 4.2, 4.4.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "rope.rope_half_split_rotary_mul",
    "title": "half-split RoPE on explicit halves, per tensor -> npu_rotary_mul (any even D < 896, BNSD as is)",
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
         "needs": "a half-mode operator: npu_rotary_mul(rotary_mode='half') or npu_apply_rotary_pos_emb"},
    ],
    "inputs": {
        "q": {"shape": ["B", "N", "S", "D"], "dtype": "act"},
        "k": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "cos": {"shape": ["S", "D"], "dtype": "act", "init": "uniform"},
        "sin": {"shape": ["S", "D"], "dtype": "act", "init": "uniform"},
    },
    "sizes": {"B": 2, "N": 4, "KVN": 2, "S": 5, "D": 96},
    "dtypes": ["float32", "bfloat16"],
    "match": {"partial_returns": True,
              "explain": [{"when": "expected add(...), found sub",
                           "near_miss": "fixtures/rope_half_split_rotary_mul_nomatch_reverse_rotation.py"}]},
    "near_misses": [
        {"file": "fixtures/rope_half_split_rotary_mul_nomatch_reverse_rotation.py",
         "reason": "both halves subtract (x2 * c - x1 * s): the rotation runs the other way, not RoPE's"},
    ],
    "doc_zh": """在显式两半上、逐个张量书写的半分式RoPE替换为逐张量的npu_rotary_mul。

功能
    识别不经rotate_half、直接在head维两半上书写的半分式（NeoX）旋转：x1、x2来自chunk(2, -1)
    或两个切片，取cos/sin表的前一半，结果为cat(x1 * c - x2 * s, x2 * c + x1 * s)。与
    rope.rope_half_split不同，它也适用于每次只旋转一个张量的辅助函数（q = rope(q, cos, sin)、
    k = rope(k, cos, sin)）：每次调用替换为一次torch_npu.npu_rotary_mul(x, c, s)（rotary_mode为
    'half'），表的前一半重复到完整head维，并在前面补单位轴到张量的维数，与eager代码的广播方式一致。
原因
    eager写法每个张量约十几个逐元素内核（切分、四次乘、一次加、一次减、拼接、表切片）；融合
    内核每个张量只需一次启动，每层在预填充和解码中都会执行。npu_apply_rotary_pos_emb需要同时
    传入q和k，而逐张量的辅助函数每次只给出其中一个，且该算子要求BSND、head_dim为64或128。
示例
    a, b = x.chunk(2, dim=-1)
    c, s = cos[..., : a.shape[-1]], sin[..., : a.shape[-1]]
    return torch.cat((a * c - b * s, b * c + a * s), dim=-1)
替代写法
    h = x.shape[-1] // 2
    c = torch.cat((cos[..., :h], cos[..., :h]), dim=-1)
    s = torch.cat((sin[..., :h], sin[..., :h]), dim=-1)
    c = c.view((1,) * (x.dim() - c.dim()) + tuple(c.shape))   # (S, D) -> (1, 1, S, D)
    s = s.view((1,) * (x.dim() - s.dim()) + tuple(s.shape))
    return torch_npu.npu_rotary_mul(x, c, s)
修复安全性
    在所检查的条件下安全：head_dim为偶数且小于896，A2/A3上half模式B、N均小于1000，x为BNSD、
    BSND、SBND或TND，表按该布局所列形状广播（BNSD：11SD、B1SD或BNSD）。与原链一样只读表的
    前一半，因此半宽表和cat(freqs, freqs)构造的表都适用。切勿把这种配对（x[i]与x[i + D/2]）
    映射到交错内核：结果会静默改变，数值测试证明了这一点。
参考
    catalog/rope/npu_rotary_mul.toml；pitfalls.md 4.2、4.4。
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
    # One table pair per tensor, from that tensor's own half width, so a match
    # on one of the two keeps only that tensor's statements.
    qh = q.shape[-1] // 2
    qc = torch.cat((cos[..., :qh], cos[..., :qh]), dim=-1)
    qs = torch.cat((sin[..., :qh], sin[..., :qh]), dim=-1)
    qc = qc.view((1,) * (q.dim() - qc.dim()) + tuple(qc.shape))
    qs = qs.view((1,) * (q.dim() - qs.dim()) + tuple(qs.shape))
    kh = k.shape[-1] // 2
    kc = torch.cat((cos[..., :kh], cos[..., :kh]), dim=-1)
    ks = torch.cat((sin[..., :kh], sin[..., :kh]), dim=-1)
    kc = kc.view((1,) * (k.dim() - kc.dim()) + tuple(kc.shape))
    ks = ks.view((1,) * (k.dim() - ks.dim()) + tuple(ks.shape))
    return torch_npu.npu_rotary_mul(q, qc, qs), torch_npu.npu_rotary_mul(k, kc, ks)


def naive_interleave_mode(q, k, cos, sin):
    h = q.shape[-1] // 2
    c = torch.cat((cos[..., :h], cos[..., :h]), dim=-1)[None, None]
    s = torch.cat((sin[..., :h], sin[..., :h]), dim=-1)[None, None]
    return (torch_npu.npu_rotary_mul(q, c, s, rotary_mode="interleave"),
            torch_npu.npu_rotary_mul(k, c, s, rotary_mode="interleave"))
