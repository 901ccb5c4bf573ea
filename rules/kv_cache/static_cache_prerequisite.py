"""A KV cache that grows with `torch.cat` needs a static (or paged) cache first: a named prerequisite.

What it does
    Finds the cache update `past_key = torch.cat([past_key, key_states], dim=-2)` (HF
    DynamicCache.update, older `layer_past` tuples, hand-written decode loops). It
    reports the prerequisite refactor: preallocate the cache once at its maximum
    length (static) or as blocks (paged), write each step in place
    (`scatter_update_` at kv_len, or kv_cache.paged_cache_write), and pass the valid
    lengths to attention.
Why
    A growing cache reallocates and copies the whole history every step (quadratic
    traffic over a generation) and changes shape each step, which defeats graph capture
    and the fused decode attention (FIA needs a fixed cache plus actual_seq_lengths_kv).
    Every decode-side fusion of the attention block depends on this refactor.
Example
    key_states = torch.cat([past_key, key_states], dim=-2)
    value_states = torch.cat([past_value, value_states], dim=-2)
Use instead
    # __init__: self.k_cache = torch.zeros(B, KVN, max_len, D) (or a paged block pool)
    torch_npu.scatter_update_(self.k_cache, kv_len, key_states, -2)
    # attention reads self.k_cache with actual_seq_lengths_kv = kv_len + S
Fix safety
    Needs prerequisites that are not mechanical: the cache's owner (model, generate
    loop, serving engine), its maximum length, batch handling and the lengths
    bookkeeping are design decisions. The numeric check shows the static write yields
    the same K/V as the concatenation.
References
    reference_chains.md model-infer-kvcache (legacy vs paged); catalog/kv_cache/scatter_update_.toml.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "kv_cache.static_cache_prerequisite",
    "title": "torch.cat-grown KV cache -> static/paged cache with in-place writes (prerequisite)",
    "module": "kv_cache",
    "apis": ["scatter_update_"],
    "stages": ["decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "static_or_paged_cache",
         "en": "Replace the growing torch.cat cache by a cache preallocated at its maximum length (static) or as a block pool (paged), written in place each step, with per-sequence lengths passed to attention.",
         "zh": "把靠torch.cat增长的缓存改为按最大长度预分配（静态）或按块池分配（分页）的缓存，每步原地写入，并把每序列长度传给注意力。",
         "mechanical": False},
    ],
    "checks": ["scatter_update_:*"],
    "facts": {"paged": False},
    "hints": {"class_names": ["DynamicCache"]},
    "inputs": {
        "past_key": {"shape": ["B", "KVN", "S0", "D"], "dtype": "act"},
        "key_states": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
    },
    "sizes": {"B": 2, "KVN": 2, "S0": 6, "S": 1, "D": 32},
    "dtypes": ["float32", "bfloat16"],
    "match": {
        "lookalikes": {"lookalike_nope_rope_concat": "fixtures/static_cache_prerequisite_nomatch_nope_rope_concat.py"},
        "quiet": [
            {"when": "expected -2, found -1", "why": "a concatenation along the last axis joins features (rotate_half, a RoPE table, a partial rotary split): no cache grows there"},
            {"when": "expected 2, found -1", "why": "the same, for the layer_past form"},
            {"when": "expected list(", "why": "what is joined is not a past/new pair written out (chunks of one tensor, a list built elsewhere, a tuple argument)"},
            {"when": "expected tuple(", "why": "the same, for the layer_past form"},
            {"when": "lacks argument #1", "why": "a one-element list grown by appends (generated tokens) is no past/new pair"},
        ],
    },
    "near_misses": [
        {"file": "fixtures/static_cache_prerequisite_nomatch_head_concat.py",
         "reason": "the concatenation is along the head axis (merging q/k heads), not along the sequence: not a cache"},
        {"file": "fixtures/static_cache_prerequisite_nomatch_nope_rope_concat.py",
         "reason": "the concatenation joins each head's no-position part with the shared rotary part along head_dim (MLA), not past and new keys along the sequence: not a cache"},
    ],
    "doc_zh": """靠torch.cat增长的KV缓存需要先改为静态（或分页）缓存：这是一个具名的前置改造。

功能
    识别缓存更新past_key = torch.cat([past_key, key_states], dim=-2)（HF DynamicCache.update、
    旧式layer_past元组、手写解码循环）。报告前置改造：一次性按最大长度预分配缓存（静态）或按块
    分配（分页），每步原地写入（在kv_len处scatter_update_，或kv_cache.paged_cache_write），并把
    有效长度传给注意力。
原因
    增长式缓存每步重新分配并拷贝全部历史（整个生成过程的访存量是二次的），且每步形状都变，妨碍
    图捕获和融合解码注意力（FIA需要固定缓存加actual_seq_lengths_kv）。注意力模块解码侧的所有融合
    都依赖这一改造。
示例
    key_states = torch.cat([past_key, key_states], dim=-2)
    value_states = torch.cat([past_value, value_states], dim=-2)
替代写法
    # __init__：self.k_cache = torch.zeros(B, KVN, max_len, D)（或分页块池）
    torch_npu.scatter_update_(self.k_cache, kv_len, key_states, -2)
    # 注意力以actual_seq_lengths_kv = kv_len + S读取self.k_cache
修复安全性
    需要非机械的前置改造：缓存归谁所有（模型、generate循环、推理服务引擎）、最大长度、batch处理
    和长度记录都是设计决策。数值检查表明静态写入得到的K/V与拼接结果相同。
参考
    reference_chains.md model-infer-kvcache（传统与分页）；catalog/kv_cache/scatter_update_.toml。
""",
}


def search(past_key, key_states):
    return torch.cat([past_key, key_states], dim=-2)


def search_tuple_past(past_key, key_states):
    layer_past = (past_key,)
    return torch.cat((layer_past[0], key_states), dim=2)


def lookalike_nope_rope_concat(past_key, key_states):
    # MLA keys: the per-head part joined with one rotary part broadcast over the heads
    return torch.cat([past_key, key_states.expand(-1, -1, past_key.shape[2], -1)], dim=-1)


def replace(past_key, key_states):
    b, kvh, s0, d = past_key.shape
    s = key_states.shape[2]
    k_cache = torch.zeros(b, kvh, s0 + s, d, dtype=past_key.dtype)
    k_cache[:, :, :s0] = past_key  # what earlier steps already wrote in place
    kv_len = torch.full((b,), s0, dtype=torch.int64)
    torch_npu.scatter_update_(k_cache, kv_len, key_states, -2)
    return k_cache
