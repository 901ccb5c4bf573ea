"""De-interleave-then-rotate_half RoPE (HF DeepSeek MLA rope part) becomes `npu_interleave_rope`.

What it does
    Finds RoPE that first reorders the last axis to even-then-odd
    (`view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)`) and then applies
    half-mode RoPE with cos/sin of shape (B, 1, S, D). That is exactly what
    `torch_npu.npu_interleave_rope(x, cos, sin)` computes, for D = 64.
Why
    The reorder is a strided copy of q and k per layer before the usual RoPE kernels;
    the fused kernel does the reorder and the rotation in one pass. DeepSeek-V2/V3/R1 and
    Kimi-K2 apply it to the 64-wide rope part of q and k in every MLA layer.
Example
    b, n, s, d = q.shape
    q = q.view(b, n, s, d // 2, 2).transpose(4, 3).reshape(b, n, s, d)
    q_out = q * cos + rotate_half(q) * sin
Use instead
    q_out = torch_npu.npu_interleave_rope(q, cos, sin)
Fix safety
    Safe when D = 64, cos/sin have N = 1 (shape (B, 1, S, 64)) and the dtype is float16
    or bfloat16. The rope width is read from the config (qk_rope_head_dim), never
    assumed: with another D the check fails and the plan says so. Other D keep the
    reorder and use a half-mode kernel after it, or npu_rotary_mul(rotary_mode=
    'interleave') on the original lanes with cos/sin repeated element-wise, whose output
    is still in pair order and needs the even/odd reorder the model applies. Never a
    half-mode kernel on the original lanes: that pairs x[i] with x[i + D/2].
References
    catalog/rope/npu_interleave_rope.toml; pitfalls.md 4.2, 4.3; reference_chains.md
    module-attention-mla-absorb.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "rope.rope_deinterleave_half",
    "title": "de-interleave + rotate_half RoPE (DeepSeek MLA rope part, D=64) -> npu_interleave_rope",
    "module": "rope",
    "apis": ["npu_interleave_rope"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_interleave_rope:*"],
    "facts": {"rotary_mode": "interleave", "layout": "BNSD"},
    "inputs": {
        "q": {"shape": ["B", "N", "S", "D"], "dtype": "act"},
        "k": {"shape": ["B", "1", "S", "D"], "dtype": "act"},
        "cos": {"shape": ["B", "1", "S", "D"], "dtype": "act", "init": "uniform"},
        "sin": {"shape": ["B", "1", "S", "D"], "dtype": "act", "init": "uniform"},
    },
    "sizes": {"B": 2, "N": 4, "S": 5, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"partial_returns": True, "contains": ["rope.rope_half", "rope.rope_half_bsnd", "rope.rope_half_rotary_mul", "rope.rope_half_split"],
              "lookalikes": {"lookalike_no_reorder": "fixtures/rope_deinterleave_half_nomatch_no_reorder.py"}},
    "near_misses": [
        {"file": "fixtures/rope_deinterleave_half_nomatch_no_reorder.py",
         "reason": "no even/odd reorder before rotate_half: plain half-mode RoPE, see rope.rope_half"},
    ],
    "doc_zh": """先解交错再rotate_half的RoPE（HF DeepSeek MLA的rope部分）替换为npu_interleave_rope。

功能
    识别先把最后一维重排为偶数在前、奇数在后（view(b, h, s, d // 2, 2).transpose(4, 3)
    .reshape(b, h, s, d)），再用形状为(B, 1, S, D)的cos/sin做half模式RoPE的写法。这正是
    torch_npu.npu_interleave_rope(x, cos, sin)在D = 64时的计算。
原因
    重排是在常规RoPE内核之前对q、k做的一次跨步拷贝；融合内核一次完成重排和旋转。
    DeepSeek-V2/V3/R1与Kimi-K2在每个MLA层对q、k的64维rope部分都这样做。
示例
    b, n, s, d = q.shape
    q = q.view(b, n, s, d // 2, 2).transpose(4, 3).reshape(b, n, s, d)
    q_out = q * cos + rotate_half(q) * sin
替代写法
    q_out = torch_npu.npu_interleave_rope(q, cos, sin)
修复安全性
    在D = 64、cos/sin的N = 1（形状(B, 1, S, 64)）且类型为float16或bfloat16时安全。rope宽度从配置
    （qk_rope_head_dim）读取而非假定：D不同时检查失败，计划会说明。其他D保留重排并在其后使用half模式
    内核，或在原始通道上使用npu_rotary_mul(rotary_mode='interleave')并把cos/sin逐元素重复，其输出
    仍为成对顺序，需要模型所做的偶/奇重排。绝不能在原始通道上使用half模式内核：那会把x[i]与
    x[i + D/2]配对。
参考
    catalog/rope/npu_interleave_rope.toml；pitfalls.md 4.2、4.3；reference_chains.md
    module-attention-mla-absorb。
""",
}


def search(q, k, cos, sin):
    bq, nq, sq, dq = q.shape
    bk, nk, sk, dk = k.shape
    q = q.view(bq, nq, sq, dq // 2, 2).transpose(4, 3).reshape(bq, nq, sq, dq)
    k = k.view(bk, nk, sk, dk // 2, 2).transpose(4, 3).reshape(bk, nk, sk, dk)
    mid = dq // 2
    q_turned = torch.cat((-q[..., mid:], q[..., :mid]), dim=-1)
    k_turned = torch.cat((-k[..., mid:], k[..., :mid]), dim=-1)
    return q * cos + q_turned * sin, k * cos + k_turned * sin


def search_even_odd_cat(q, k, cos, sin):
    q = torch.cat((q[..., 0::2], q[..., 1::2]), dim=-1)
    k = torch.cat((k[..., 0::2], k[..., 1::2]), dim=-1)
    qa, qb = q.chunk(2, dim=-1)
    ka, kb = k.chunk(2, dim=-1)
    return q * cos + torch.cat((-qb, qa), dim=-1) * sin, k * cos + torch.cat((-kb, ka), dim=-1) * sin


def lookalike_no_reorder(q, k, cos, sin):
    # rotate_half straight on the head: half-mode RoPE
    q_mid = q.shape[-1] // 2
    k_mid = k.shape[-1] // 2
    q_turned = torch.cat((-q[..., q_mid:], q[..., :q_mid]), dim=-1)
    k_turned = torch.cat((-k[..., k_mid:], k[..., :k_mid]), dim=-1)
    return q * cos + q_turned * sin, k * cos + k_turned * sin


def replace(q, k, cos, sin):
    return torch_npu.npu_interleave_rope(q, cos, sin), torch_npu.npu_interleave_rope(k, cos, sin)


def naive_half_without_reorder(q, k, cos, sin):
    return torch_npu.npu_rotary_mul(q, cos, sin), torch_npu.npu_rotary_mul(k, cos, sin)
