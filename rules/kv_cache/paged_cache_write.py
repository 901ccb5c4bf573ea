"""A paged-cache write by slot_mapping becomes `npu_scatter_nd_update_`.

What it does
    Finds the write of this step's tokens into a paged KV cache of blocks
    `(num_blocks, block_size, KVN, D)` addressed by a flat slot per token
    (`slot = block_table[b, pos // block_size] * block_size + pos % block_size`):
    `cache[slot // bs, slot % bs] = key` or `cache.view(-1, KVN, D)[slot_mapping] = key`.
    It proposes `torch_npu.npu_scatter_nd_update_(cache.view(-1, KVN, D),
    slot_mapping.view(-1, 1), key)`.
Why
    Advanced-index assignment builds index tensors and runs a generic scatter; the fused
    update writes the rows in place in one kernel, in prefill and in decode. It is the
    write that pairs with FIA's block_table read.
Example
    block_idx = slot_mapping // block_size
    block_off = slot_mapping % block_size
    key_cache[block_idx, block_off] = key
Use instead
    torch_npu.npu_scatter_nd_update_(key_cache.view(-1, num_kv_heads, head_dim),
                                     slot_mapping.view(-1, 1), key)
Fix safety
    Safe when the cache is ND `(num_blocks, block_size, KVN, D)` and contiguous: the
    view to `(num_blocks * block_size, KVN, D)` is then the slot order. indices must be
    `[T, 1]` of int32/int64 matching updates' leading axis (pitfalls 6.6). For NZ caches
    (cache_mode PA_NZ) use npu_scatter_pa_kv_cache, which writes K and V together.
References
    catalog/kv_cache/npu_scatter_nd_update_.toml, catalog/kv_cache/npu_scatter_pa_kv_cache.toml;
    pitfalls.md 6.6; reference_chains.md model-infer-kvcache.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "kv_cache.paged_cache_write",
    "title": "paged KV write by slot_mapping -> npu_scatter_nd_update_(cache.view(-1, KVN, D), slots.view(-1, 1), k)",
    "module": "kv_cache",
    "apis": ["npu_scatter_nd_update_"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_scatter_nd_update_:*"],
    "facts": {"paged": True},
    "inputs": {
        "key_cache": {"shape": ["NB", "BS", "KVN", "D"], "dtype": "act"},
        "key": {"shape": ["T", "KVN", "D"], "dtype": "act"},
        "slot_mapping": {"shape": ["T"], "dtype": "int64", "init": "unique_randint", "high": "NB * BS"},
        "block_size": {"dtype": "param", "expr": "BS"},
    },
    "sizes": {"NB": 4, "BS": 16, "KVN": 2, "D": 32, "T": 7},
    "dtypes": ["float32", "bfloat16"],
    "match": {"lookalikes": {"lookalike_block_major_heads": "fixtures/paged_cache_write_nomatch_block_major_heads.py"},
              # The flat-view writes are two steps (view, write): one paired step tells nothing.
              "near_miss_share": 0.75},
    "near_misses": [
        {"file": "fixtures/paged_cache_write_nomatch_block_major_heads.py",
         "reason": "the cache is (num_blocks, KVN, block_size, D) (heads before slots): a flat view is not slot-ordered"},
    ],
    "doc_zh": """按slot_mapping写入分页缓存的操作替换为npu_scatter_nd_update_。

功能
    识别把本步token写入分页KV缓存的写法：缓存由块组成(num_blocks, block_size, KVN, D)，每个token
    用扁平slot寻址（slot = block_table[b, pos // block_size] * block_size + pos % block_size）：
    cache[slot // bs, slot % bs] = key或cache.view(-1, KVN, D)[slot_mapping] = key。建议改为
    torch_npu.npu_scatter_nd_update_(cache.view(-1, KVN, D), slot_mapping.view(-1, 1), key)。
原因
    高级索引赋值要构造索引张量并走通用scatter；融合更新用一个内核原地写入，预填充和解码都适用。
    它与FIA通过block_table读取相配合。
示例
    block_idx = slot_mapping // block_size
    block_off = slot_mapping % block_size
    key_cache[block_idx, block_off] = key
替代写法
    torch_npu.npu_scatter_nd_update_(key_cache.view(-1, num_kv_heads, head_dim),
                                     slot_mapping.view(-1, 1), key)
修复安全性
    缓存为ND格式(num_blocks, block_size, KVN, D)且连续时安全：此时view为(num_blocks * block_size,
    KVN, D)正好是slot顺序。indices须为int32/int64的[T, 1]，与updates的首维一致（pitfalls 6.6）。
    NZ缓存（cache_mode PA_NZ）使用npu_scatter_pa_kv_cache，同时写K和V。
参考
    catalog/kv_cache/npu_scatter_nd_update_.toml、catalog/kv_cache/npu_scatter_pa_kv_cache.toml；
    pitfalls.md 6.6；reference_chains.md model-infer-kvcache。
""",
}


def search(key_cache, key, slot_mapping, block_size):
    block_idx = slot_mapping // block_size
    block_off = slot_mapping % block_size
    key_cache[block_idx, block_off] = key
    return key_cache


def search_flat_view(key_cache, key, slot_mapping, block_size):
    flat = key_cache.view(-1, key_cache.shape[-2], key_cache.shape[-1])
    flat[slot_mapping] = key
    return key_cache


def search_index_copy(key_cache, key, slot_mapping, block_size):
    key_cache.view(-1, key.shape[-2], key.shape[-1]).index_copy_(0, slot_mapping, key)
    return key_cache


def lookalike_block_major_heads(key_cache, key, slot_mapping, block_size):
    # The cache's memory laid out (num_blocks, KVN, block_size, D): the heads come
    # before the slots, so the slot offset indexes the third axis.
    heads_first = key_cache.view(key_cache.shape[0], key_cache.shape[2], key_cache.shape[1], key_cache.shape[3])
    block_idx = slot_mapping // block_size
    block_off = slot_mapping % block_size
    heads_first[block_idx, :, block_off] = key
    return heads_first


def replace(key_cache, key, slot_mapping, block_size):
    torch_npu.npu_scatter_nd_update_(key_cache.view(-1, key.shape[-2], key.shape[-1]),
                                     slot_mapping.view(-1, 1), key)
    return key_cache


def naive_slot_as_block(key_cache, key, slot_mapping, block_size):
    # Treating the slot as a block index (forgetting // block_size) writes whole wrong rows.
    torch_npu.npu_scatter_nd_update_(key_cache.view(-1, key.shape[-2], key.shape[-1]),
                                     (slot_mapping // block_size).view(-1, 1), key)
    return key_cache
