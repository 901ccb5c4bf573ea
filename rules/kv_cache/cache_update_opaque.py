"""A K/V write through a cache object defined outside the analysed files (HF `Cache.update`) becomes, after a static cache, `scatter_update_`.

What it does
    Finds `past_key_value.update(key_states, value_states, layer_idx, cache_kwargs)`:
    the layer hands its new keys and values to a cache object and gets back all keys
    and values so far. The cache's class (HF `DynamicCache`, `StaticCache`, ...) is
    not in the analysed files, so what `update` does is opaque here: npufuse cannot
    tell whether it concatenates, writes in place or pages. It proposes the static-cache
    form: K/V buffers preallocated at the maximum length, written in place with
    `torch_npu.scatter_update_(cache, kv_len, key_states, -2)`, kv_len passed on to
    attention.
Why
    A cache that grows with `torch.cat` (HF's default DynamicCache) copies the whole
    past every step and gives the fused attention kernels no fixed buffer and no
    lengths. The in-place write touches only the new token, and the same buffers and
    lengths feed FIA's actual_seq_lengths_kv.
Example
    if past_key_value is not None:
        key_states, value_states = past_key_value.update(
            key_states, value_states, self.layer_idx, cache_kwargs)
Use instead
    # self.k_cache / self.v_cache: [B, KVN, max_len, D] preallocated; kv_len: [B] int64
    torch_npu.scatter_update_(self.k_cache, kv_len, key_states, -2)
    torch_npu.scatter_update_(self.v_cache, kv_len, value_states, -2)
    key_states, value_states = self.k_cache, self.v_cache
Fix safety
    Needs prerequisites: the cache object is opaque to the analysis, so the change is
    a refactor by hand. Replace the cache class by preallocated per-layer buffers
    (or a paged pool, see kv_cache.paged_cache_write), keep kv_len per sequence in
    the generation loop, and let attention read lengths instead of the grown tensors.
    Which cache class the model is run with (DynamicCache, StaticCache, a
    quantised or offloaded cache) decides how much already is in place: check it where
    the model is called.
References
    catalog/kv_cache/scatter_update_.toml; reference_chains.md model-infer-kvcache
    (legacy vs paged).
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "kv_cache.cache_update_opaque",
    "title": "K/V written through an opaque cache object (HF Cache.update) -> static cache + scatter_update_ (prerequisite)",
    "module": "kv_cache",
    "apis": ["scatter_update_"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "opaque_cache_to_static",
         "en": "The cache object's class is outside the analysed files: replace it by per-layer K/V buffers preallocated at the maximum length, written in place with scatter_update_ at each sequence's length, and keep kv_len in the generation loop for attention.",
         "zh": "缓存对象的类不在分析的文件中：将其替换为按最大长度预分配的每层K/V缓冲区，在每条序列的长度处用scatter_update_原地写入，并在生成循环中维护kv_len供注意力使用。",
         "mechanical": False},
    ],
    "checks": ["scatter_update_:*"],
    "facts": {},
    "hints": {"class_names": ["DynamicCache", "Cache", "StaticCache"]},
    "inputs": {
        "past_key_value": {"shape": ["B", "KVN", "S0", "D"], "dtype": "act", "init": "concat_cache"},
        "key_states": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "value_states": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "layer_idx": {"dtype": "param", "value": 0},
        "cache_kwargs": {"dtype": "param", "value": None},
    },
    "sizes": {"B": 2, "KVN": 2, "S0": 6, "S": 1, "D": 32},
    "dtypes": ["float32", "bfloat16"],
    "match": {"opaque_calls": True,
              "explain": [{"when": "lacks argument", "near_miss": "fixtures/cache_update_opaque_nomatch_dict_update.py"}]},
    "near_misses": [
        {"file": "fixtures/cache_update_opaque_nomatch_dict_update.py",
         "reason": "update() with a single argument is a dict update, not a K/V write through a cache object"},
    ],
    "doc_zh": """经由分析文件之外定义的缓存对象（HF Cache.update）写入K/V，在改为静态缓存后替换为scatter_update_。

功能
    识别past_key_value.update(key_states, value_states, layer_idx, cache_kwargs)：层把新的
    key和value交给缓存对象，取回迄今为止的全部key和value。缓存的类（HF DynamicCache、
    StaticCache等）不在分析的文件中，因此update做什么在此不透明：npufuse无法判断它是拼接、
    原地写入还是分页。建议静态缓存形式：按最大长度预分配K/V缓冲区，用
    torch_npu.scatter_update_(cache, kv_len, key_states, -2)原地写入，并把kv_len传给注意力。
原因
    靠torch.cat增长的缓存（HF默认的DynamicCache）每一步都复制全部历史，融合注意力内核既
    没有固定缓冲区也没有长度。原地写入只触及新token，同样的缓冲区和长度可直接供FIA的
    actual_seq_lengths_kv使用。
示例
    if past_key_value is not None:
        key_states, value_states = past_key_value.update(
            key_states, value_states, self.layer_idx, cache_kwargs)
替代写法
    # self.k_cache / self.v_cache：预分配的[B, KVN, max_len, D]；kv_len：[B] int64
    torch_npu.scatter_update_(self.k_cache, kv_len, key_states, -2)
    torch_npu.scatter_update_(self.v_cache, kv_len, value_states, -2)
    key_states, value_states = self.k_cache, self.v_cache
修复安全性
    需要前置改造：缓存对象对分析不透明，因此这是手工重构。把缓存类替换为预分配的每层缓冲区
    （或分页池，见kv_cache.paged_cache_write），在生成循环中维护每条序列的kv_len，让注意力
    读取长度而不是增长后的张量。模型实际使用哪种缓存类（DynamicCache、StaticCache、量化或
    卸载缓存）决定了已有多少改造到位：在调用模型处确认。
参考
    catalog/kv_cache/scatter_update_.toml；reference_chains.md model-infer-kvcache
    （传统与分页）。
""",
}


def search(past_key_value, key_states, value_states, layer_idx, cache_kwargs):
    return past_key_value.update(key_states, value_states, layer_idx, cache_kwargs)


def replace(past_key_value, key_states, value_states, layer_idx, cache_kwargs):
    # The static form of the same step: buffers holding what earlier steps wrote, the
    # new token written in place at the current length.
    past_k, past_v = past_key_value.key_cache[layer_idx], past_key_value.value_cache[layer_idx]
    b, kvh, s0, d = past_k.shape
    s = key_states.shape[2]
    k_cache = torch.zeros(b, kvh, s0 + s, d, dtype=past_k.dtype)
    v_cache = torch.zeros(b, kvh, s0 + s, d, dtype=past_v.dtype)
    k_cache[:, :, :s0] = past_k
    v_cache[:, :, :s0] = past_v
    kv_len = torch.full((b,), s0, dtype=torch.int64)
    torch_npu.scatter_update_(k_cache, kv_len, key_states, -2)
    torch_npu.scatter_update_(v_cache, kv_len, value_states, -2)
    return k_cache, v_cache
