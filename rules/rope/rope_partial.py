"""Partial rotary (RoPE on the first `rotary_dim` of each head) becomes `npu_rotary_mul` on the slice.

What it does
    Finds RoPE applied to `x[..., :rotary_dim]` with the rest `x[..., rotary_dim:]`
    passed through and concatenated back (`partial_rotary_factor` < 1: Phi, StableLM,
    GPT-NeoX, GLM-4, Qwen3-Next). It proposes `npu_rotary_mul` on the rotated slice and
    keeps the slice/concat.
Why
    The rotated part costs the same ten element-wise kernels as full RoPE; the fused
    kernel replaces them. `npu_apply_rotary_pos_emb` requires cos/sin of the full head
    width (D of q = D of cos, 64 or 128) and crashes otherwise, so partial rotary goes
    through the slice.
Example
    width = cos.shape[-1]
    q_head, q_tail = q[..., :width], q[..., width:]
    q_out = torch.cat([q_head * cos + rotate_half(q_head) * sin, q_tail], dim=-1)
Use instead
    q_out = torch.cat([torch_npu.npu_rotary_mul(q_head, cos, sin), q_tail], dim=-1)
Fix safety
    Safe under npu_rotary_mul's conditions on the rotated width (even, below 896). The
    rule keeps the mode of the rotated part: a half split here; an interleaved partial
    rotary (GLM) uses rotary_mode='interleave' and is reported with that fact.
References
    catalog/rope/npu_rotary_mul.toml, catalog/rope/npu_apply_rotary_pos_emb.toml
    (partial_rotary_needs_slices); pitfalls.md 4.1.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "rope.rope_partial",
    "title": "partial rotary (slice of head_dim) -> npu_rotary_mul on the slice, concat kept",
    "module": "rope",
    "apis": ["npu_rotary_mul"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_rotary_mul:*", "npu_apply_rotary_pos_emb:partial_rotary_needs_slices"],
    "facts": {"rotary_mode": "half", "layout": "BNSD"},
    "inputs": {
        "q": {"shape": ["B", "N", "S", "D"], "dtype": "act"},
        "k": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "cos": {"shape": ["B", "S", "R"], "dtype": "act", "init": "uniform"},
        "sin": {"shape": ["B", "S", "R"], "dtype": "act", "init": "uniform"},
    },
    "sizes": {"B": 2, "N": 4, "KVN": 2, "S": 5, "D": 96, "R": 32},
    "dtypes": ["float32", "bfloat16"],
    "match": {"partial_returns": True,
              "lookalikes": {"lookalike_tail_rotated": "fixtures/rope_partial_nomatch_tail_rotated.py"}},
    "near_misses": [
        {"file": "fixtures/rope_partial_nomatch_tail_rotated.py",
         "reason": "the rotated slice is the tail of head_dim, not the head: the fused call would need the slice offset kept"},
    ],
    "doc_zh": """部分旋转（只对每个头的前rotary_dim维做RoPE）替换为对该切片调用npu_rotary_mul。

功能
    识别对x[..., :rotary_dim]做RoPE、其余x[..., rotary_dim:]原样保留再拼接回去的写法
    （partial_rotary_factor < 1：Phi、StableLM、GPT-NeoX、GLM-4、Qwen3-Next）。建议对旋转
    切片调用npu_rotary_mul，保留切片与拼接。
原因
    被旋转部分同样需要约十个逐元素内核，融合内核可替代它们。npu_apply_rotary_pos_emb要求
    cos/sin覆盖完整头宽（q与cos的D相同，为64或128），否则报错，因此部分旋转走切片路径。
示例
    width = cos.shape[-1]
    q_head, q_tail = q[..., :width], q[..., width:]
    q_out = torch.cat([q_head * cos + rotate_half(q_head) * sin, q_tail], dim=-1)
替代写法
    q_out = torch.cat([torch_npu.npu_rotary_mul(q_head, cos, sin), q_tail], dim=-1)
修复安全性
    在npu_rotary_mul对旋转宽度的条件下（偶数、小于896）安全。规则保持旋转部分的模式：此处
    为half；交错式部分旋转（GLM）使用rotary_mode='interleave'，并随该事实一并报告。
参考
    catalog/rope/npu_rotary_mul.toml、catalog/rope/npu_apply_rotary_pos_emb.toml
    （partial_rotary_needs_slices）；pitfalls.md 4.1。
""",
}


def search(q, k, cos, sin):
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    width = c.shape[-1]
    mid = width // 2
    q_head, q_tail = q[..., :width], q[..., width:]
    k_head, k_tail = k[..., :width], k[..., width:]
    q_head = q_head * c + torch.cat((-q_head[..., mid:], q_head[..., :mid]), dim=-1) * s
    k_head = k_head * c + torch.cat((-k_head[..., mid:], k_head[..., :mid]), dim=-1) * s
    return torch.cat([q_head, q_tail], dim=-1), torch.cat([k_head, k_tail], dim=-1)


def search_split(q, k, cos, sin):
    r = cos.shape[-1]
    c = cos[:, None]
    s = sin[:, None]
    q_rot, q_pass = torch.split(q, [r, q.shape[-1] - r], dim=-1)
    k_rot, k_pass = torch.split(k, [r, k.shape[-1] - r], dim=-1)
    qa, qb = q_rot.chunk(2, dim=-1)
    ka, kb = k_rot.chunk(2, dim=-1)
    q_out = torch.cat((q_rot * c + torch.cat((-qb, qa), dim=-1) * s, q_pass), dim=-1)
    k_out = torch.cat((k_rot * c + torch.cat((-kb, ka), dim=-1) * s, k_pass), dim=-1)
    return q_out, k_out


def lookalike_tail_rotated(q, k, cos, sin):
    # the rotated slice taken from the end of head_dim
    r = cos.shape[-1]
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    h = r // 2
    q_pass, q_rot = q[..., :-r], q[..., -r:]
    k_pass, k_rot = k[..., :-r], k[..., -r:]
    q_rot = q_rot * c + torch.cat((-q_rot[..., h:], q_rot[..., :h]), dim=-1) * s
    k_rot = k_rot * c + torch.cat((-k_rot[..., h:], k_rot[..., :h]), dim=-1) * s
    return torch.cat((q_pass, q_rot), dim=-1), torch.cat((k_pass, k_rot), dim=-1)


def replace(q, k, cos, sin):
    r = cos.shape[-1]
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    q_rot = torch_npu.npu_rotary_mul(q[..., :r].contiguous(), c, s)
    k_rot = torch_npu.npu_rotary_mul(k[..., :r].contiguous(), c, s)
    return torch.cat([q_rot, q[..., r:]], dim=-1), torch.cat([k_rot, k[..., r:]], dim=-1)


def naive_full_width_apply(q, k, cos, sin):
    # npu_apply_rotary_pos_emb on the whole head with narrow cos/sin: refused by the
    # operator (cos D must equal q D), which is the crash pitfalls.md 4.1 reports.
    q_bsnd = q.transpose(1, 2).contiguous()
    k_bsnd = k.transpose(1, 2).contiguous()
    torch_npu.npu_apply_rotary_pos_emb(q_bsnd, k_bsnd, cos.unsqueeze(2), sin.unsqueeze(2),
                                       layout="BSND")
    return q_bsnd.transpose(1, 2), k_bsnd.transpose(1, 2)
