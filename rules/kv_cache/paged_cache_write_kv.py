"""Paged writes of K and V by the same slot_mapping become one `npu_scatter_pa_kv_cache` call.

What it does
    Finds the two paged-cache writes of a step, keys and values into their block pools
    `(num_blocks, block_size, KVN, D)` at the same flat slots
    (`cache[slot // bs, slot % bs] = x`). It proposes
    `torch_npu.npu_scatter_pa_kv_cache(key, value, key_cache, value_cache, slot_mapping,
    cache_mode='Norm')`, which writes both in place.
Why
    One launch instead of two index-put chains (each with its own index arithmetic); the
    same operator also serves the FRACTAL_NZ cache layout (cache_mode='PA_NZ') that the
    expert MLA/GQA ports use for decode.
Example
    block_idx, block_off = slot_mapping // block_size, slot_mapping % block_size
    key_cache[block_idx, block_off] = key
    value_cache[block_idx, block_off] = value
Use instead
    torch_npu.npu_scatter_pa_kv_cache(key, value, key_cache, value_cache, slot_mapping,
                                      cache_mode="Norm")
Fix safety
    Safe for ND caches with cache_mode 'Norm' and for NZ caches with 'PA_NZ' (then the
    cache tensors are NZ-shaped). Key, value and the caches share one dtype; slots are
    unique per step; A2/A3 only. When only one of K/V is written there (MLA latent
    caches), kv_cache.paged_cache_write applies instead.
References
    catalog/kv_cache/npu_scatter_pa_kv_cache.toml; pitfalls.md 6.6.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "kv_cache.paged_cache_write_kv",
    "title": "paged K and V writes by one slot_mapping -> npu_scatter_pa_kv_cache",
    "module": "kv_cache",
    "apis": ["npu_scatter_pa_kv_cache"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_scatter_pa_kv_cache:*"],
    "facts": {"paged": True, "cache_mode": "Norm"},
    "inputs": {
        "key": {"shape": ["T", "KVN", "D"], "dtype": "act"},
        "value": {"shape": ["T", "KVN", "D"], "dtype": "act"},
        "key_cache": {"shape": ["NB", "BS", "KVN", "D"], "dtype": "act"},
        "value_cache": {"shape": ["NB", "BS", "KVN", "D"], "dtype": "act"},
        "slot_mapping": {"shape": ["T"], "dtype": "int64", "init": "unique_randint", "high": "NB * BS"},
        "block_size": {"dtype": "param", "expr": "BS"},
    },
    "sizes": {"NB": 4, "BS": 16, "KVN": 2, "D": 32, "T": 7},
    "dtypes": ["float32", "bfloat16"],
    "near_misses": [
        {"file": "fixtures/paged_cache_write_kv_nomatch_different_slots.py",
         "reason": "the key and value writes do not share one slot computation (here two slot tensors): one fused call writes both at the same slots"},
    ],
    "match": {"explain": [{"when": "feeds two places in the pattern; the model computes it twice", "near_miss": "fixtures/paged_cache_write_kv_nomatch_different_slots.py"}]},
    "doc_zh": """用同一slot_mapping分页写入K和V，替换为一次npu_scatter_pa_kv_cache调用。

功能
    识别一步中的两次分页缓存写入：把key和value写入各自的块池(num_blocks, block_size, KVN, D)中
    相同的扁平slot（cache[slot // bs, slot % bs] = x）。建议改为torch_npu.npu_scatter_pa_kv_cache(
    key, value, key_cache, value_cache, slot_mapping, cache_mode='Norm')，同时原地写入两者。
原因
    一次启动代替两段index-put计算（各有自己的索引运算）；同一算子还支持专家MLA/GQA移植在解码中
    使用的FRACTAL_NZ缓存布局（cache_mode='PA_NZ'）。
示例
    block_idx, block_off = slot_mapping // block_size, slot_mapping % block_size
    key_cache[block_idx, block_off] = key
    value_cache[block_idx, block_off] = value
替代写法
    torch_npu.npu_scatter_pa_kv_cache(key, value, key_cache, value_cache, slot_mapping,
                                      cache_mode="Norm")
修复安全性
    ND缓存用cache_mode 'Norm'、NZ缓存用'PA_NZ'（此时缓存张量为NZ形状）时安全。key、value与缓存类型
    一致；每步slot唯一；仅A2/A3。若该处只写K/V之一（MLA潜变量缓存），改用kv_cache.paged_cache_write。
参考
    catalog/kv_cache/npu_scatter_pa_kv_cache.toml；pitfalls.md 6.6。
""",
}


def search(key, value, key_cache, value_cache, slot_mapping, block_size):
    block_idx = slot_mapping // block_size
    block_off = slot_mapping % block_size
    key_cache[block_idx, block_off] = key
    value_cache[block_idx, block_off] = value
    return key_cache, value_cache


def search_flat_views(key, value, key_cache, value_cache, slot_mapping, block_size):
    key_cache.view(-1, key.shape[-2], key.shape[-1])[slot_mapping] = key
    value_cache.view(-1, value.shape[-2], value.shape[-1])[slot_mapping] = value
    return key_cache, value_cache


def replace(key, value, key_cache, value_cache, slot_mapping, block_size):
    torch_npu.npu_scatter_pa_kv_cache(key, value, key_cache, value_cache, slot_mapping,
                                      cache_mode="Norm")
    return key_cache, value_cache


def naive_nz_mode_on_nd_cache(key, value, key_cache, value_cache, slot_mapping, block_size):
    # PA_NZ reads the 4-D ND cache as (blocks, N*D/c, block_size, c): rows land scrambled.
    torch_npu.npu_scatter_pa_kv_cache(key, value, key_cache, value_cache, slot_mapping,
                                      cache_mode="PA_NZ")
    return key_cache, value_cache
