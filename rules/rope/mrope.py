"""Multimodal RoPE (Qwen2-VL / Qwen2.5-VL style mrope sections) becomes `npu_mrope`.

What it does
    Finds RoPE whose cos/sin come from three position streams (temporal, height, width):
    `position_ids` of shape (3, B, S), frequencies `position_ids[..., None] * inv_freq`,
    and a per-section pick concatenating section i of each half from stream `i % 3`
    (`split(mrope_section * 2)`), applied in half mode to q and k. It proposes
    `torch_npu.npu_mrope(positions, query, key, cos_sin_cache, head_size,
    mrope_section=mrope_section, rotary_mode='half')` on token-major (T, N*D) tensors.
Why
    The eager path recomputes the frequencies and cos/sin for the three streams every
    forward, splits and re-concatenates them, and then runs the usual RoPE chain on q and
    k. The fused kernel gathers cos/sin from a cache by position and rotates both tensors
    in one launch.
Example
    widths = mrope_section * 2
    c = torch.cat([part[i % 3] for i, part in enumerate(cos.split(widths, dim=-1))], dim=-1)
    s = torch.cat([part[i % 3] for i, part in enumerate(sin.split(widths, dim=-1))], dim=-1)
    q_out = q * c[:, None] + rotate_half(q) * s[:, None]
Use instead
    # cos_sin_cache: (max_positions, rotary_dim) = [cos half | sin half], built once
    q, k = torch_npu.npu_mrope(position_ids.reshape(3, -1), q_tokens, k_tokens,
                               cos_sin_cache, head_dim, mrope_section=mrope_section,
                               rotary_mode='half')
Fix safety
    Needs prerequisites: a cos/sin cache built once at init from `inv_freq` (mechanical),
    and q/k in token-major (T, N*D) layout around the call. Checked: rotary_dim <=
    head_size, head_size and rotary_dim multiples of 32 (16 for float32),
    sum(mrope_section) = rotary_dim / 2. Interleaved mrope variants use
    rotary_mode='interleaved'.
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
        "position_ids": {"shape": [3, "B", "S"], "dtype": "int64", "init": "randint", "low": 0, "high": "MAXPOS"},
        "inv_freq": {"shape": ["D // 2"], "dtype": "float32", "init": "uniform", "low": 0.001, "high": 1.0},
        "mrope_section": {"dtype": "param", "value": [8, 12, 12]},
        "max_position_embeddings": {"dtype": "param", "expr": "MAXPOS"},
    },
    "sizes": {"B": 2, "N": 4, "KVN": 2, "S": 5, "D": 64, "MAXPOS": 64},
    "dtypes": ["float32", "bfloat16"],
    "near_misses": [
        {"file": "fixtures/mrope_nomatch_single_stream.py",
         "reason": "one position stream only (no per-section selection): plain RoPE, see rope.rope_half"},
    ],
    "doc_zh": """多模态RoPE（Qwen2-VL / Qwen2.5-VL风格的mrope分段）替换为npu_mrope。

功能
    识别cos/sin来自三路位置流（时间、高、宽）的RoPE：position_ids形状为(3, B, S)，频率为
    position_ids[..., None] * inv_freq，每半部的第i段取第i % 3路位置流
    （split(mrope_section * 2)）后拼接，再以half模式作用于q和k。
    建议在按token排列的(T, N*D)张量上调用torch_npu.npu_mrope(positions, query, key,
    cos_sin_cache, head_size, mrope_section=mrope_section, rotary_mode='half')。
原因
    eager路径每次前向都为三路位置流重新计算频率与cos/sin，切分再拼接，然后对q、k走常规RoPE
    计算链。融合内核按位置从缓存取cos/sin，一次旋转两个张量。
示例
    widths = mrope_section * 2
    c = torch.cat([part[i % 3] for i, part in enumerate(cos.split(widths, dim=-1))], dim=-1)
    s = torch.cat([part[i % 3] for i, part in enumerate(sin.split(widths, dim=-1))], dim=-1)
    q_out = q * c[:, None] + rotate_half(q) * s[:, None]
替代写法
    # cos_sin_cache：(max_positions, rotary_dim) = [cos半部 | sin半部]，只构建一次
    q, k = torch_npu.npu_mrope(position_ids.reshape(3, -1), q_tokens, k_tokens,
                               cos_sin_cache, head_dim, mrope_section=mrope_section,
                               rotary_mode='half')
修复安全性
    需要前置改造：在初始化时由inv_freq一次性构建cos/sin缓存（可机械完成），调用前后把q/k转为
    按token排列的(T, N*D)布局。检查项：rotary_dim <= head_size，head_size与rotary_dim为32的
    倍数（float32为16），sum(mrope_section) = rotary_dim / 2。交错式mrope使用
    rotary_mode='interleaved'。
参考
    catalog/rope/npu_mrope.toml；pitfalls.md 4.5。
""",
}


def search(q, k, position_ids, inv_freq, mrope_section, max_position_embeddings):
    angles = position_ids[..., None].float() * inv_freq
    angles = torch.cat((angles, angles), dim=-1)
    cos_all = angles.cos().to(q.dtype)
    sin_all = angles.sin().to(q.dtype)
    widths = mrope_section * 2
    c = torch.cat([part[i % 3] for i, part in enumerate(cos_all.split(widths, dim=-1))], dim=-1)[:, None]
    s = torch.cat([part[i % 3] for i, part in enumerate(sin_all.split(widths, dim=-1))], dim=-1)[:, None]
    q_mid = q.shape[-1] // 2
    k_mid = k.shape[-1] // 2
    q_turned = torch.cat((-q[..., q_mid:], q[..., :q_mid]), dim=-1)
    k_turned = torch.cat((-k[..., k_mid:], k[..., :k_mid]), dim=-1)
    return q * c + q_turned * s, k * c + k_turned * s


def replace(q, k, position_ids, inv_freq, mrope_section, max_position_embeddings):
    t = torch.arange(max_position_embeddings, dtype=torch.float32)
    freqs = torch.outer(t, inv_freq)
    cos_sin_cache = torch.cat((freqs.cos(), freqs.sin()), dim=-1).to(q.dtype)
    b, n, s, d = q.shape
    q_tokens = q.transpose(1, 2).reshape(b * s, n * d)
    k_tokens = k.transpose(1, 2).reshape(b * s, -1)
    q_out, k_out = torch_npu.npu_mrope(position_ids.reshape(3, -1), q_tokens, k_tokens,
                                       cos_sin_cache, d, mrope_section=mrope_section,
                                       rotary_mode="half")
    return (q_out.reshape(b, s, n, d).transpose(1, 2),
            k_out.reshape(b, s, -1, d).transpose(1, 2))


def naive_text_positions_only(q, k, position_ids, inv_freq, mrope_section, max_position_embeddings):
    # Using only the temporal stream (mrope_section ignored) loses the spatial positions.
    t = torch.arange(max_position_embeddings, dtype=torch.float32)
    freqs = torch.outer(t, inv_freq)
    cos_sin_cache = torch.cat((freqs.cos(), freqs.sin()), dim=-1).to(q.dtype)
    b, n, s, d = q.shape
    q_out, k_out = torch_npu.npu_mrope(position_ids[0].reshape(-1), q.transpose(1, 2).reshape(b * s, -1),
                                       k.transpose(1, 2).reshape(b * s, -1), cos_sin_cache, d)
    return (q_out.reshape(b, s, n, d).transpose(1, 2),
            k_out.reshape(b, s, -1, d).transpose(1, 2))
