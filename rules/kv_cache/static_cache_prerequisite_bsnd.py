"""A BSND KV cache grown with `torch.cat` along axis 1 needs a static (or paged) cache first: a named prerequisite.

What it does
    Finds the cache update of a model that keeps its keys and values as
    [batch, seq, kv_heads, head_dim] and appends each step's keys along axis 1
    (`k = torch.cat([past_key_value[0], k], dim=1)`), transposing to BNSD only for the
    attention product. Axis 1 is the sequence only in that layout: the key's axis order
    is read from the code (its head split `view(b, s, n, d)` upstream, and any
    transposes of the sequence and head axes after it), and a key whose order the code
    does not show is not taken for a cache. It reports the prerequisite refactor:
    preallocate the cache once at its maximum length (static, kept BSND) or as blocks
    (paged, PA_BSND), write each step in place (`scatter_update_` along axis 1 at
    kv_len, or kv_cache.paged_cache_write), and pass the valid lengths to attention.
Why
    As with the BNSD form (kv_cache.static_cache_prerequisite): the growing cache
    reallocates and copies its whole history every step, changes shape every step, and
    keeps the decode attention from becoming FIA over a fixed cache with
    actual_seq_lengths_kv. A BSND cache suits FIA's BSND input layout directly.
Example
    k = self.k_proj(h).view(bsz, q_len, self.num_kv_heads, self.head_dim)
    k = torch.cat([past_key_value[0], k], dim=1)
Use instead
    # __init__: self.k_cache = torch.zeros(B, max_len, KVN, D) (or a PA_BSND block pool)
    torch_npu.scatter_update_(self.k_cache, kv_len, k, 1)
    # attention reads self.k_cache (input_layout="BSND") with actual_seq_lengths_kv = kv_len + S
Fix safety
    Needs prerequisites that are not mechanical: who owns the cache, its maximum length,
    batch handling and the lengths bookkeeping are design decisions. The numeric check
    shows the in-place write along axis 1 yields the same K/V as the concatenation.
References
    reference_chains.md model-infer-kvcache (legacy vs paged); catalog/kv_cache/scatter_update_.toml;
    kv_cache.static_cache_prerequisite (the BNSD form, axis -2).
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "kv_cache.static_cache_prerequisite_bsnd",
    "title": "torch.cat-grown BSND KV cache (axis 1) -> static/paged cache with in-place writes (prerequisite)",
    "module": "kv_cache",
    "apis": ["scatter_update_"],
    "stages": ["decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "static_or_paged_cache",
         "en": "Replace the growing torch.cat cache by a BSND cache preallocated at its maximum length (static) or as a PA_BSND block pool (paged), written in place along the sequence axis each step, with per-sequence lengths passed to attention.",
         "zh": "把靠torch.cat增长的BSND缓存改为按最大长度预分配（静态）或按PA_BSND块池分配（分页）的缓存，每步沿序列轴原地写入，并把每序列长度传给注意力。",
         "mechanical": False},
    ],
    "checks": ["scatter_update_:*"],
    "facts": {"paged": False, "layout": "BSND"},
    "hints": {"class_names": []},
    "inputs": {
        "past_key": {"shape": ["B", "S0", "KVN", "D"], "dtype": "act"},
        "key_states": {"shape": ["B", "S", "KVN", "D"], "dtype": "act"},
    },
    "sizes": {"B": 2, "S0": 6, "S": 1, "KVN": 2, "D": 32},
    "dtypes": ["float32", "bfloat16"],
    "match": {
        "layouts": {"key_states": "BSND"},
        "quiet": [
            {"when": "expected 1, found -1", "why": "a concatenation along the last axis joins features: no cache grows there"},
            {"when": "expected list(", "why": "what is joined is not a past/new pair written out (chunks of one tensor, a list built elsewhere, a tuple argument)"},
            {"when": "expected tuple(", "why": "the same, for the layer_past form"},
            {"when": "lacks argument #1", "why": "a one-element list grown by appends (generated tokens) is no past/new pair"},
        ],
        "explain": [
            {"when": "key_states is BNSD", "near_miss": "fixtures/static_cache_prerequisite_bsnd_nomatch_bnsd_heads.py"},
            {"when": "does not show the axis order of key_states", "near_miss": "fixtures/static_cache_prerequisite_bsnd_nomatch_unknown_axes.py"},
        ],
    },
    "near_misses": [
        {"file": "fixtures/static_cache_prerequisite_bsnd_nomatch_bnsd_heads.py",
         "reason": "the keys are BNSD there, so axis 1 is the head axis: the concatenation merges heads, it does not grow a cache"},
        {"file": "fixtures/static_cache_prerequisite_bsnd_nomatch_unknown_axes.py",
         "reason": "the code does not show which axis of the keys is the sequence, so an axis-1 concatenation is not taken for a cache"},
    ],
    "doc_zh": """靠torch.cat沿第1轴增长的BSND KV缓存需要先改为静态（或分页）缓存：这是一个具名的前置改造。

功能
    识别把键值保存为[batch, seq, kv_heads, head_dim]、每步沿第1轴追加新键的模型的缓存更新
    （k = torch.cat([past_key_value[0], k], dim=1)），这类模型只在计算注意力乘积时才转置为BNSD。
    只有在这种布局下第1轴才是序列轴：键的轴顺序从代码中读出（上游的分头view(b, s, n, d)，
    以及其后交换序列轴与头轴的转置），代码看不出轴顺序的键不被当作缓存。报告前置改造：一次性
    按最大长度预分配缓存（静态，保持BSND）或按块分配（分页，PA_BSND），每步原地写入（在kv_len
    处沿第1轴scatter_update_，或kv_cache.paged_cache_write），并把有效长度传给注意力。
原因
    与BNSD形式（kv_cache.static_cache_prerequisite）相同：增长式缓存每步重新分配并拷贝全部历史，
    每步形状都变，使解码注意力无法改为在固定缓存上带actual_seq_lengths_kv的FIA。BSND缓存可直接
    作为FIA的BSND输入布局。
示例
    k = self.k_proj(h).view(bsz, q_len, self.num_kv_heads, self.head_dim)
    k = torch.cat([past_key_value[0], k], dim=1)
替代写法
    # __init__：self.k_cache = torch.zeros(B, max_len, KVN, D)（或PA_BSND块池）
    torch_npu.scatter_update_(self.k_cache, kv_len, k, 1)
    # 注意力以input_layout="BSND"、actual_seq_lengths_kv = kv_len + S读取self.k_cache
修复安全性
    需要非机械的前置改造：缓存归谁所有、最大长度、batch处理和长度记录都是设计决策。数值检查表明
    沿第1轴的原地写入得到的K/V与拼接结果相同。
参考
    reference_chains.md model-infer-kvcache（传统与分页）；catalog/kv_cache/scatter_update_.toml；
    kv_cache.static_cache_prerequisite（BNSD形式，第-2轴）。
""",
}


def search(past_key, key_states):
    return torch.cat([past_key, key_states], dim=1)


def search_tuple_past(past_key, key_states):
    layer_past = (past_key,)
    return torch.cat((layer_past[0], key_states), dim=1)


def replace(past_key, key_states):
    b, s0, kvh, d = past_key.shape
    s = key_states.shape[1]
    k_cache = torch.zeros(b, s0 + s, kvh, d, dtype=past_key.dtype)
    k_cache[:, :s0] = past_key  # what earlier steps already wrote in place
    kv_len = torch.full((b,), s0, dtype=torch.int64)
    torch_npu.scatter_update_(k_cache, kv_len, key_states, 1)
    return k_cache


def naive_bnsd_axis(past_key, key_states):
    # The BNSD rule's axis -2 is the head axis here: the write lands in the wrong axis.
    b, s0, kvh, d = past_key.shape
    s = key_states.shape[1]
    k_cache = torch.zeros(b, s0 + s, kvh, d, dtype=past_key.dtype)
    k_cache[:, :s0] = past_key
    kv_len = torch.full((b,), s0, dtype=torch.int64)
    torch_npu.scatter_update_(k_cache, kv_len, key_states, -2)
    return k_cache
