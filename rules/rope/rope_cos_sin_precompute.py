"""Per-forward cos/sin computation becomes a cache built once and indexed by position.

What it does
    Finds cos/sin recomputed from `inv_freq` and `position_ids` inside a forward
    (`freqs = inv_freq[None, :, None] @ position_ids[:, None, :]`, `emb = cat(freqs,
    freqs)`, `emb.cos()`, `emb.sin()`; the outer product may also be a broadcast through
    `inv_freq.view(1, 1, -1)` or `einsum("bs,d->bsd", ...)`). It proposes the prerequisite refactor every fused
    RoPE operator relies on: `cos_cached`/`sin_cached` registered as buffers at init over
    all positions, and one `index_select` by `position_ids` per model forward, handed to
    the layers.
Why
    The fused RoPE operators take cos/sin tensors in fixed shapes ((B, S, 1, D) for BSND,
    (T, 1, D) for TND, a cos_sin_cache for npu_mrope). Computing them once per forward
    (not per layer, not per call) and in the layout the operator wants removes a matmul,
    a concat and two transcendental kernels from every step and is what lets the
    attention layers call the fused kernels directly.
Example
    angles = (inv_freq[None, :, None] @ position_ids[:, None, :].float()).transpose(1, 2)
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos(), angles.sin()
Use instead
    # __init__: emb over arange(max_position_embeddings); register_buffer cos_cached, sin_cached
    cos = torch.index_select(self.cos_cached, 0, position_ids.reshape(-1)).view(*position_ids.shape, -1)
    sin = torch.index_select(self.sin_cached, 0, position_ids.reshape(-1)).view(*position_ids.shape, -1)
Fix safety
    Needs prerequisites (mechanical, no operator of its own): the cache must cover
    max_position_embeddings, and scaled RoPE variants (linear, dynamic NTK, YaRN,
    Llama-3 frequency scaling) must be folded into `inv_freq` and any attention factor
    before caching. Dynamic NTK changes `inv_freq` with the sequence length and is not
    cacheable this way: the rule then stays display-only.
References
    reference_chains.md rotary-embedding-pattern; issue workflow step 5 (mechanical
    prerequisite refactors).
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "rope.rope_cos_sin_precompute",
    "title": "cos/sin recomputed per forward -> cos_cached/sin_cached buffers + index_select (prerequisite)",
    "module": "rope",
    "apis": [],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "rope_cos_sin_cache",
         "en": "Register cos_cached/sin_cached over [0, max_position_embeddings) at init; select rows by position_ids once per model forward and pass cos/sin to the layers.",
         "zh": "在初始化时对[0, max_position_embeddings)注册cos_cached/sin_cached缓冲区；每次模型前向按position_ids选取一次，并把cos/sin传给各层。",
         "mechanical": True},
    ],
    "checks": [],
    "facts": {},
    "hints": {"class_names": ["RotaryEmbedding", "LlamaRotaryEmbedding"]},
    "inputs": {
        "inv_freq": {"shape": ["D // 2"], "dtype": "float32", "init": "uniform", "low": 0.001, "high": 1.0},
        "position_ids": {"shape": ["B", "S"], "dtype": "int64", "init": "randint", "low": 0, "high": "MAXPOS"},
        "max_position_embeddings": {"dtype": "param", "expr": "MAXPOS"},
    },
    "sizes": {"B": 2, "S": 7, "D": 64, "MAXPOS": 128},
    "dtypes": ["float32"],
    # apply builds the tables once, at the end of the rotary class's __init__.
    "apply": {
        "built_once": ["cos_cached", "sin_cached"],
        "init_bindings": {"max_position_embeddings": [
            "max_position_embeddings", "self.max_position_embeddings", "self.max_seq_len_cached",
            "config.max_position_embeddings", "cfg.max_position_embeddings", "args.max_position_embeddings",
            "args.max_seq_len"]},
        # transformers' @dynamic_rope_update recomputes inv_freq before a call only for the
        # dynamic-NTK and LongRoPE types; for every other type the tables stay right.
        "decorators": {"dynamic_rope_update": {
            "config_keys": ["rope_scaling.rope_type", "rope_scaling.type", "rope_parameters.rope_type"],
            "stale_when": ["dynamic", "longrope"]}},
    },
    "match": {"explain": [{"when": "found div(", "near_miss": "fixtures/rope_cos_sin_precompute_nomatch_dynamic_ntk.py"}]},
    "near_misses": [
        {"file": "fixtures/rope_cos_sin_precompute_nomatch_dynamic_ntk.py",
         "reason": "inv_freq is rescaled from the current sequence length (dynamic NTK): a fixed cache would use stale frequencies"},
    ],
    "doc_zh": """每次前向重算的cos/sin改为一次构建、按位置索引的缓存。

功能
    识别在前向中由inv_freq和position_ids重新计算cos/sin的写法（freqs = inv_freq[None, :, None]
    @ position_ids[:, None, :]，emb = cat(freqs, freqs)，emb.cos()，emb.sin()；外积也可以写成
    经inv_freq.view(1, 1, -1)的广播或einsum("bs,d->bsd", ...)）。建议做所有
    融合RoPE算子都依赖的前置改造：初始化时对所有位置注册cos_cached/sin_cached缓冲区，每次
    模型前向按position_ids做一次index_select并传给各层。
原因
    融合RoPE算子要求固定形状的cos/sin（BSND为(B, S, 1, D)，TND为(T, 1, D)，npu_mrope为
    cos_sin_cache）。每次前向只计算一次（而非每层、每次调用），并按算子需要的布局准备，可以
    去掉每步的一次矩阵乘、一次拼接和两个超越函数内核，也让注意力层能直接调用融合内核。
示例
    angles = (inv_freq[None, :, None] @ position_ids[:, None, :].float()).transpose(1, 2)
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos(), angles.sin()
替代写法
    # __init__：对arange(max_position_embeddings)计算emb；register_buffer cos_cached、sin_cached
    cos = torch.index_select(self.cos_cached, 0, position_ids.reshape(-1)).view(*position_ids.shape, -1)
    sin = torch.index_select(self.sin_cached, 0, position_ids.reshape(-1)).view(*position_ids.shape, -1)
修复安全性
    需要前置改造（可机械完成，本身不对应算子）：缓存须覆盖max_position_embeddings；缩放RoPE
    变体（linear、动态NTK、YaRN、Llama-3频率缩放）须先并入inv_freq及注意力因子再缓存。动态
    NTK随序列长度改变inv_freq，不能这样缓存：此时规则仅展示。
参考
    reference_chains.md rotary-embedding-pattern；工作流第5步（可机械完成的前置改造）。
""",
}


def search(inv_freq, position_ids, max_position_embeddings):
    f = inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
    p = position_ids[:, None, :].float()
    angles = (f @ p).transpose(1, 2)
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos(), angles.sin()


def search_outer(inv_freq, position_ids, max_position_embeddings):
    freqs = position_ids.float()[..., None] * inv_freq[None, None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def search_view(inv_freq, position_ids, max_position_embeddings):
    # The frequencies broadcast by a view that adds the two leading unit axes.
    angles = position_ids.float().unsqueeze(-1) * inv_freq.float().view(1, 1, -1)
    emb = torch.cat((angles, angles), dim=-1)
    return emb.cos(), emb.sin()


def search_einsum(inv_freq, position_ids, max_position_embeddings):
    # The outer product spelt as an einsum over [B, S] positions.
    freqs = torch.einsum("bs,d->bsd", position_ids.float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def replace(inv_freq, position_ids, max_position_embeddings):
    t = torch.arange(max_position_embeddings, dtype=torch.float32)
    freqs = torch.outer(t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos_cached = emb.cos()
    sin_cached = emb.sin()
    cos = torch.index_select(cos_cached, 0, position_ids.reshape(-1)).view(*position_ids.shape, -1)
    sin = torch.index_select(sin_cached, 0, position_ids.reshape(-1)).view(*position_ids.shape, -1)
    return cos, sin
