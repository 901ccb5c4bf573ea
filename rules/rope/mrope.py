"""Multimodal RoPE (Qwen2-VL / Qwen2.5-VL style mrope sections) becomes `npu_mrope`.

What it does
    Finds RoPE whose cos/sin tables carry three position streams (temporal, height,
    width) on their first axis, shape (3, B, S, D), and are narrowed to one table by a
    per-section pick: the last axis is split by `mrope_section * 2` and piece i is taken
    from stream `i % 3`, then the pieces are concatenated and applied in half mode
    (`rotate_half`) to q and k. Where the tables come from (passed in, or computed from
    `position_ids[..., None] * inv_freq` in the same forward) does not matter. It
    proposes `torch_npu.npu_mrope(positions, query, key, cos_sin_cache, head_size,
    mrope_section=mrope_section, rotary_mode='half')` on token-major (T, N*D) tensors.
Why
    The eager path builds cos/sin for all three streams, splits and re-concatenates
    them every forward, and then runs the usual RoPE chain on q and k. The fused kernel
    gathers cos/sin from a cache by position and rotates both tensors in one launch.
Example
    widths = mrope_section * 2
    c = torch.cat([part[i % 3] for i, part in enumerate(cos.split(widths, dim=-1))], dim=-1)
    s = torch.cat([part[i % 3] for i, part in enumerate(sin.split(widths, dim=-1))], dim=-1)
    q_out = q * c.unsqueeze(1) + rotate_half(q) * s.unsqueeze(1)
Use instead
    # cos_sin_cache: (max_positions, rotary_dim) = [cos half | sin half], built once;
    # position_ids: (3, B, S) flattened to (3, T)
    q, k = torch_npu.npu_mrope(position_ids.reshape(3, -1), q_tokens, k_tokens,
                               cos_sin_cache, head_dim, mrope_section=mrope_section,
                               rotary_mode='half')
Fix safety
    Needs prerequisites: a cos/sin cache built once at init from `inv_freq`, the (3, B, S)
    position ids handed to the attention instead of the cos/sin tables, and q/k in
    token-major (T, N*D) layout around the call. The operator reads one half of each
    cache row and uses it for both halves of the head, which is what a table built as
    cos(cat(freqs, freqs)) holds. Checked: rotary_dim <= head_size, head_size and
    rotary_dim multiples of 32 (16 for float32), sum(mrope_section) = rotary_dim / 2.
    Interleaved mrope variants use rotary_mode='interleaved'. The numeric check feeds
    the operator a cache with one row per (stream, token) taken from the tables, so it
    compares exactly what the chain computes.
References
    catalog/rope/npu_mrope.toml; pitfalls.md 4.5.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "rope.mrope",
    "title": "multimodal RoPE (mrope sections over 3 position streams) -> npu_mrope",
    "module": "rope",
    "apis": ["npu_mrope"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "mrope_cos_sin_cache",
         "en": "Build cos_sin_cache = cat(cos(t * inv_freq), sin(t * inv_freq)) over t in [0, max_position_embeddings) once at init.",
         "zh": "在初始化时对t ∈ [0, max_position_embeddings)一次性构建cos_sin_cache = cat(cos(t * inv_freq), sin(t * inv_freq))。",
         "mechanical": True},
        {"id": "mrope_positions_in",
         "en": "Hand the (3, B, S) position ids to the attention (flattened to (3, T)) in place of the per-stream cos/sin tables.",
         "zh": "把(3, B, S)的位置id（展平为(3, T)）传给注意力层，替代按位置流计算的cos/sin表。",
         "mechanical": False},
        {"id": "token_major_qk",
         "en": "Pass q and k as token-major (T, N * head_dim) tensors and restore the model's layout after the call.",
         "zh": "以按token排列的(T, N * head_dim)张量传入q和k，调用后恢复模型原布局。",
         "mechanical": True},
    ],
    "checks": ["npu_mrope:*"],
    "facts": {"rotary_mode": "half"},
    "hints": {"class_names": ["Qwen2VLRotaryEmbedding", "Qwen2_5_VLRotaryEmbedding"]},
    "inputs": {
        "q": {"shape": ["B", "N", "S", "D"], "dtype": "act"},
        "k": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "cos": {"shape": [3, "B", "S", "D"], "dtype": "act", "init": "half_repeated"},
        "sin": {"shape": [3, "B", "S", "D"], "dtype": "act", "init": "half_repeated"},
        "mrope_section": {"dtype": "param", "value": [8, 12, 12]},
    },
    "sizes": {"B": 2, "N": 4, "KVN": 2, "S": 5, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"partial_returns": True, "contains": ["rope.rope_half", "rope.rope_half_bsnd", "rope.rope_half_rotary_mul"],
              "explain": [{"when": "expected cat(", "near_miss": "fixtures/mrope_nomatch_single_stream.py"}]},
    "near_misses": [
        {"file": "fixtures/mrope_nomatch_single_stream.py",
         "reason": "one position stream only (no per-section selection): plain RoPE, see rope.rope_half"},
    ],
    "doc_zh": """多模态RoPE（Qwen2-VL / Qwen2.5-VL风格的mrope分段）替换为npu_mrope。

功能
    识别cos/sin表在第一维上带三路位置流（时间、高、宽）、形状为(3, B, S, D)的RoPE：最后一维
    按mrope_section * 2切分，第i段取第i % 3路位置流，拼接成一张表后以half模式（rotate_half）
    作用于q和k。表从哪里来（作为参数传入，或在同一前向里由position_ids[..., None] * inv_freq
    计算）不影响匹配。建议在按token排列的(T, N*D)张量上调用torch_npu.npu_mrope(positions,
    query, key, cos_sin_cache, head_size, mrope_section=mrope_section, rotary_mode='half')。
原因
    eager路径每次前向都为三路位置流构建cos/sin，切分再拼接，然后对q、k走常规RoPE计算链。
    融合内核按位置从缓存取cos/sin，一次旋转两个张量。
示例
    widths = mrope_section * 2
    c = torch.cat([part[i % 3] for i, part in enumerate(cos.split(widths, dim=-1))], dim=-1)
    s = torch.cat([part[i % 3] for i, part in enumerate(sin.split(widths, dim=-1))], dim=-1)
    q_out = q * c.unsqueeze(1) + rotate_half(q) * s.unsqueeze(1)
替代写法
    # cos_sin_cache：(max_positions, rotary_dim) = [cos半部 | sin半部]，只构建一次；
    # position_ids：(3, B, S)，展平为(3, T)
    q, k = torch_npu.npu_mrope(position_ids.reshape(3, -1), q_tokens, k_tokens,
                               cos_sin_cache, head_dim, mrope_section=mrope_section,
                               rotary_mode='half')
修复安全性
    需要前置改造：在初始化时由inv_freq一次性构建cos/sin缓存，把(3, B, S)的位置id替代cos/sin表
    传给注意力层，调用前后把q/k转为按token排列的(T, N*D)布局。算子只读取缓存每行的一半并同时
    用于head的两半，这正是由cos(cat(freqs, freqs))构建的表所含内容。检查项：rotary_dim <=
    head_size，head_size与rotary_dim为32的倍数（float32为16），sum(mrope_section) =
    rotary_dim / 2。交错式mrope使用rotary_mode='interleaved'。数值检查给算子一张按
    (位置流, token)逐行取自cos/sin表的缓存，因此比较的正是原计算链的结果。
参考
    catalog/rope/npu_mrope.toml；pitfalls.md 4.5。
""",
}



def search(q, k, cos, sin, mrope_section):
    # HF Qwen2-VL: the split happens inside the comprehension.
    widths = mrope_section * 2
    c = torch.cat([part[i % 3] for i, part in enumerate(cos.split(widths, dim=-1))], dim=-1).unsqueeze(1)
    s = torch.cat([part[i % 3] for i, part in enumerate(sin.split(widths, dim=-1))], dim=-1).unsqueeze(1)
    q_mid = q.shape[-1] // 2
    k_mid = k.shape[-1] // 2
    q_turned = torch.cat((-q[..., q_mid:], q[..., :q_mid]), dim=-1)
    k_turned = torch.cat((-k[..., k_mid:], k[..., :k_mid]), dim=-1)
    # Rotated half first: a one-stream model then meets most of the pattern before the
    # missing section pick, and is told as a near-miss.
    return q_turned * s + q * c, k_turned * s + k * c


def search_split_first(q, k, cos, sin, mrope_section):
    # The pieces are split into a local (or in a helper) before the comprehension picks them.
    widths = mrope_section * 2
    cos_parts = cos.split(widths, dim=-1)
    sin_parts = sin.split(widths, dim=-1)
    c = torch.cat([part[i % 3] for i, part in enumerate(cos_parts)], dim=-1).unsqueeze(1)
    s = torch.cat([part[i % 3] for i, part in enumerate(sin_parts)], dim=-1).unsqueeze(1)
    q_mid = q.shape[-1] // 2
    k_mid = k.shape[-1] // 2
    q_turned = torch.cat((-q[..., q_mid:], q[..., :q_mid]), dim=-1)
    k_turned = torch.cat((-k[..., k_mid:], k[..., :k_mid]), dim=-1)
    # Rotated half first: a one-stream model then meets most of the pattern before the
    # missing section pick, and is told as a near-miss.
    return q_turned * s + q * c, k_turned * s + k * c


def _cache_per_stream_token(cos, sin):
    # One cache row per (stream, token): row j * T + t holds stream j's half table at token t.
    half = cos.shape[-1] // 2
    rows = cos.shape[0] * cos.shape[1] * cos.shape[2]
    cache = torch.cat((cos[..., :half], sin[..., :half]), dim=-1).reshape(rows, -1)
    positions = torch.arange(rows).reshape(cos.shape[0], -1)
    return cache, positions


def replace(q, k, cos, sin, mrope_section):
    cache, positions = _cache_per_stream_token(cos, sin)
    b, n, s, d = q.shape
    q_tokens = q.transpose(1, 2).reshape(b * s, n * d)
    k_tokens = k.transpose(1, 2).reshape(b * s, -1)
    q_out, k_out = torch_npu.npu_mrope(positions, q_tokens, k_tokens, cache, d,
                                       mrope_section=mrope_section, rotary_mode="half")
    return (q_out.reshape(b, s, n, d).transpose(1, 2),
            k_out.reshape(b, s, -1, d).transpose(1, 2))


def naive_text_positions_only(q, k, cos, sin, mrope_section):
    # Only the temporal stream (mrope_section ignored): the spatial positions are lost.
    cache, positions = _cache_per_stream_token(cos[:1], sin[:1])
    b, n, s, d = q.shape
    q_out, k_out = torch_npu.npu_mrope(positions.reshape(-1), q.transpose(1, 2).reshape(b * s, -1),
                                       k.transpose(1, 2).reshape(b * s, -1), cache, d)
    return (q_out.reshape(b, s, n, d).transpose(1, 2),
            k_out.reshape(b, s, -1, d).transpose(1, 2))
