"""A contiguous write of new K/V into a static cache becomes `scatter_update_` by kv_len.

What it does
    Finds the write of this step's keys (or values) into a preallocated cache at
    consecutive positions along the sequence axis: a static cache's
    `cache.index_copy_(2, cache_position, key_states)` or the slice assignment
    `cache[:, :, start:start + s] = key_states`. It proposes
    `torch_npu.scatter_update_(cache, kv_len, key_states, -2)` with one start position
    per sequence.
Why
    index_copy_ and slice writes go through generic indexing kernels; scatter_update_
    is the in-place cache write the expert ports use (torchair llama, cann-recipes GQA
    module), and it takes a start per sequence, so batches with different lengths need
    no per-sequence loop.
Example
    self.k_cache.index_copy_(2, positions, k_new)
    self.v_cache.index_copy_(2, positions, v_new)
Use instead
    torch_npu.scatter_update_(self.k_cache, kv_len, k_new, -2)
    torch_npu.scatter_update_(self.v_cache, kv_len, v_new, -2)
Fix safety
    Needs prerequisites: a static cache (kv_cache.static_cache_prerequisite) and a
    per-sequence start tensor `kv_len` (int32/int64, one entry per batch row) kept by the
    decode loop; for a shared cache_position it is `cache_position[0]` repeated. The
    cache must be contiguous. Paged caches use kv_cache.paged_cache_write instead.
References
    catalog/kv_cache/scatter_update_.toml; pitfalls.md 6.6; reference_chains.md
    module-attention-gqa, model-infer-kvcache.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "kv_cache.cache_update_scatter",
    "title": "contiguous K/V write into a static cache (index_copy_ / slice) -> scatter_update_ by kv_len",
    "module": "kv_cache",
    "apis": ["scatter_update_"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "kv_len_tensor",
         "en": "Keep a per-sequence start position tensor kv_len (one entry per batch row) next to the cache.",
         "zh": "在缓存旁维护每条序列的起始位置张量kv_len（每个batch行一个值）。",
         "mechanical": True},
    ],
    "checks": ["scatter_update_:*"],
    "facts": {"paged": False},
    "hints": {"class_names": ["StaticCache"]},
    "inputs": {
        "key_cache": {"shape": ["B", "KVN", "START + S + 8", "D"], "dtype": "act"},
        "key_states": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "cache_position": {"shape": ["S"], "dtype": "int64", "init": "arange", "start": "START"},
    },
    "sizes": {"B": 2, "KVN": 2, "S": 3, "D": 32, "START": 5},
    "dtypes": ["float32", "bfloat16"],
    "near_misses": [
        {"file": "fixtures/cache_update_scatter_nomatch_scattered_positions.py",
         "reason": "the written positions are gathered from a table, not consecutive from one start: not a contiguous write"},
    ],
    "match": {"explain": [{"when": "expected slice(...), found getitem(", "near_miss": "fixtures/cache_update_scatter_nomatch_scattered_positions.py"}]},
    "doc_zh": """把新K/V连续写入静态缓存的操作替换为按kv_len的scatter_update_。

功能
    识别把本步的key（或value）写入预分配缓存、沿序列轴连续位置的写法：静态缓存的
    cache.index_copy_(2, cache_position, key_states)，或切片赋值cache[:, :, start:start + s] =
    key_states。建议改为torch_npu.scatter_update_(cache, kv_len, key_states, -2)，每条序列一个
    起始位置。
原因
    index_copy_和切片写入走通用索引内核；scatter_update_是专家移植使用的原地缓存写入（torchair
    llama、cann-recipes GQA模块），且每条序列有自己的起始位置，长度不同的batch无需逐序列循环。
示例
    self.k_cache.index_copy_(2, positions, k_new)
    self.v_cache.index_copy_(2, positions, v_new)
替代写法
    torch_npu.scatter_update_(self.k_cache, kv_len, k_new, -2)
    torch_npu.scatter_update_(self.v_cache, kv_len, v_new, -2)
修复安全性
    需要前置改造：静态缓存（kv_cache.static_cache_prerequisite），以及由解码循环维护的每序列起始
    位置张量kv_len（int32/int64，每个batch行一个值）；共享cache_position时即cache_position[0]的
    重复。缓存须连续。分页缓存改用kv_cache.paged_cache_write。
参考
    catalog/kv_cache/scatter_update_.toml；pitfalls.md 6.6；reference_chains.md
    module-attention-gqa、model-infer-kvcache。
""",
}


def search(key_cache, key_states, cache_position):
    key_cache.index_copy_(2, cache_position, key_states)
    return key_cache


def search_slice_assign(key_cache, key_states, cache_position):
    start = int(cache_position[0])
    key_cache[:, :, start:start + key_states.shape[2]] = key_states
    return key_cache


def replace(key_cache, key_states, cache_position):
    kv_len = cache_position[:1].expand(key_states.shape[0]).contiguous()
    torch_npu.scatter_update_(key_cache, kv_len, key_states, -2)
    return key_cache


def naive_wrong_axis(key_cache, key_states, cache_position):
    # Axis 1 is the head axis in BNSD: the write lands in the wrong place or is refused.
    kv_len = cache_position[:1].expand(key_states.shape[0]).contiguous()
    torch_npu.scatter_update_(key_cache, kv_len, key_states, 1)
    return key_cache
