"""A decode step's attention over a BSND cache, with the GQA repeat on axis 2 before the transposes, becomes `npu_fused_infer_attention_score` in BSND with actual_seq_lengths_kv.

What it does
    Finds the unmasked attention core of a decode step written on token-major tensors:
    the cached keys and values are [batch, seq, kv_heads, head_dim] (a cache grown along
    axis 1, kv_cache.static_cache_prerequisite_bsnd), the KV heads are repeated on axis
    2 (`torch.repeat_interleave(k, n_rep, dim=2)`), then q, k and v are transposed to
    BNSD for `softmax(q @ kᵀ * scale) @ v` and the result is transposed back. With one
    query token per sequence and every cached key valid, no mask is applied. It proposes
    one `torch_npu.npu_fused_infer_attention_score(query, key, value, num_heads=N,
    num_key_value_heads=KVN, input_layout='BSND', scale=scale,
    actual_seq_lengths_kv=kv_len)[0]` on the un-repeated, untransposed tensors.
Why
    Decode is memory-bound: the eager path copies the whole cache once per query group
    for the repeat and again for the transposes, and writes the scores and the
    probabilities every step. The fused kernel reads each KV head once, in the layout
    the cache already has.
Example
    k_full = torch.repeat_interleave(k, repeats=n_rep, dim=2)
    v_full = torch.repeat_interleave(v, repeats=n_rep, dim=2)
    scores = q.transpose(1, 2) @ k_full.transpose(1, 2).transpose(-2, -1) * scale
    out = (scores.softmax(dim=-1) @ v_full.transpose(1, 2)).transpose(1, 2)
Use instead
    out = torch_npu.npu_fused_infer_attention_score(
        q, k_cache, v_cache, num_heads=N, num_key_value_heads=KVN, input_layout="BSND",
        scale=scale, actual_seq_lengths_kv=kv_len)[0]
Fix safety
    Needs prerequisites. The kernel takes a fixed cache and the valid length of each
    sequence: the growing torch.cat cache becomes a preallocated BSND cache first
    (kv_cache.static_cache_prerequisite_bsnd) and the decode loop keeps kv_len. The
    model's code has no mask in this stage, so every key it holds counts; a batch whose
    sequences have different lengths needs those lengths, never the padded maximum. With
    query length 1 the kernel ignores sparse_mode and pre_tokens, so a sliding window
    is not applied (catalog decode_window_not_applied). Pass scale explicitly (default 1.0).
References
    catalog/attention/npu_fused_infer_attention_score.toml; pitfalls.md 1.6, 1.7;
    reference_chains.md module-attention-gqa; attention.fia_prefill_bsnd_repeat (the
    prefill form of the same chain).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "attention.fia_decode_bsnd_repeat",
    "title": "decode attention over a BSND cache with the GQA repeat on axis 2 before the transposes -> FIA BSND with actual_seq_lengths_kv",
    "module": "attention",
    "apis": ["npu_fused_infer_attention_score"],
    "stages": ["decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "static_cache_with_lengths",
         "en": "Keep the cache as a preallocated BSND buffer (kv_cache.static_cache_prerequisite_bsnd) and the number of valid keys of each sequence (kv_len) in the decode loop; pass them as key/value and actual_seq_lengths_kv.",
         "zh": "把缓存改为预分配的BSND缓冲区（kv_cache.static_cache_prerequisite_bsnd），并在解码循环中维护每条序列的有效key数（kv_len）；分别作为key/value和actual_seq_lengths_kv传入。",
         "mechanical": False},
    ],
    "checks": [
        "npu_fused_infer_attention_score:query_dtype",
        "npu_fused_infer_attention_score:gqa_heads_divisible",
        "npu_fused_infer_attention_score:gqa_ratio_le_64",
        "npu_fused_infer_attention_score:layout_supported",
        "npu_fused_infer_attention_score:decode_batch_le_65536",
        "npu_fused_infer_attention_score:decode_heads_le_256",
        "npu_fused_infer_attention_score:decode_kv_seq_le_262144",
        "npu_fused_infer_attention_score:decode_head_dim_le_512",
        "npu_fused_infer_attention_score:decode_window_not_applied",
        "npu_fused_infer_attention_score:no_learnable_sink",
        "npu_fused_infer_attention_score:no_alibi_bias"
    ],
    "facts": {"stage": "decode", "layout": "BSND", "q_seq_len": 1, "attention_sinks": False},
    "inputs": {
        "query": {"shape": ["B", 1, "N", "D"], "dtype": "act"},
        "key": {"shape": ["B", "S", "KVN", "D"], "dtype": "act"},
        "value": {"shape": ["B", "S", "KVN", "D"], "dtype": "act"},
        "scaling": {"dtype": "param", "expr": "D ** -0.5"},
        "n_rep": {"dtype": "param", "expr": "N // KVN"},
    },
    "sizes": {"B": 3, "N": 8, "KVN": 2, "S": 12, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"explain": [{"when": "expected 2, found 1", "near_miss": "fixtures/fia_decode_bsnd_repeat_nomatch_repeat_on_sequence.py"}]},
    "near_misses": [
        {"file": "fixtures/fia_decode_bsnd_repeat_nomatch_repeat_on_sequence.py",
         "reason": "the repeat runs along the sequence axis (dim 1 of (B, S, N, D)), not the heads: not a GQA expansion"},
    ],
    "doc_zh": """解码步在BSND缓存上的注意力（GQA重复在第2轴、转置之前完成），替换为BSND布局、带actual_seq_lengths_kv的npu_fused_infer_attention_score。

功能
    识别按token排列张量上写出的解码步无掩码注意力核心：缓存的键值为[batch, seq, kv_heads, head_dim]
    （沿第1轴增长的缓存，见kv_cache.static_cache_prerequisite_bsnd），KV头在第2轴上重复
    （torch.repeat_interleave(k, n_rep, dim=2)），之后q、k、v转置为BNSD计算softmax(q @ kᵀ * scale) @ v，
    结果再转置回来。每条序列只有一个查询token且缓存中的key都有效，因此不加掩码。建议在未重复、
    未转置的张量上调用一次torch_npu.npu_fused_infer_attention_score(query, key, value, num_heads=N,
    num_key_value_heads=KVN, input_layout='BSND', scale=scale, actual_seq_lengths_kv=kv_len)[0]。
原因
    解码受访存限制：eager路径为重复按查询组把整个缓存拷贝一次，转置又拷贝一次，并且每步写出分数
    和概率。融合内核按缓存已有的布局每个KV头只读一次。
示例
    k_full = torch.repeat_interleave(k, repeats=n_rep, dim=2)
    v_full = torch.repeat_interleave(v, repeats=n_rep, dim=2)
    scores = q.transpose(1, 2) @ k_full.transpose(1, 2).transpose(-2, -1) * scale
    out = (scores.softmax(dim=-1) @ v_full.transpose(1, 2)).transpose(1, 2)
替代写法
    out = torch_npu.npu_fused_infer_attention_score(
        q, k_cache, v_cache, num_heads=N, num_key_value_heads=KVN, input_layout="BSND",
        scale=scale, actual_seq_lengths_kv=kv_len)[0]
修复安全性
    需要前置改造。内核需要固定的缓存和每条序列的有效长度：先把靠torch.cat增长的缓存改为预分配的
    BSND缓存（kv_cache.static_cache_prerequisite_bsnd），并由解码循环维护kv_len。模型代码在此阶段
    不加掩码，其持有的每个key都参与计算；各序列长度不同的batch需要传入各自长度，不能用填充后的
    最大值。查询长度为1时内核忽略sparse_mode和pre_tokens，因此不会应用滑动窗口（目录
    decode_window_not_applied）。须显式传入scale（默认1.0）。
参考
    catalog/attention/npu_fused_infer_attention_score.toml；pitfalls.md 1.6、1.7；
    reference_chains.md module-attention-gqa；attention.fia_prefill_bsnd_repeat（同一链的预填充形式）。
""",
}


def search(query, key, value, scaling, n_rep):
    key_states = torch.repeat_interleave(key, repeats=n_rep, dim=2)
    value_states = torch.repeat_interleave(value, repeats=n_rep, dim=2)
    q = query.transpose(1, 2)
    k = key_states.transpose(1, 2)
    v = value_states.transpose(1, 2)
    scores = q @ k.transpose(-2, -1) * scaling
    probs = scores.softmax(dim=-1)
    return (probs @ v).transpose(1, 2)


def search_scaled_query(query, key, value, scaling, n_rep):
    # The scale folded into q, the softmax taken in float32.
    key_states = torch.repeat_interleave(key, n_rep, dim=2)
    value_states = torch.repeat_interleave(value, n_rep, dim=2)
    q = query.transpose(1, 2) * scaling
    scores = torch.matmul(q, key_states.transpose(1, 2).transpose(2, 3))
    probs = F.softmax(scores.float(), dim=-1).type_as(q)
    return torch.matmul(probs, value_states.transpose(1, 2)).transpose(1, 2)


def replace(query, key, value, scaling, n_rep):
    # Every cached key is valid here; a static cache passes the lengths the decode loop keeps.
    kv_len = [key.shape[1]] * key.shape[0]
    return torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=query.shape[2], num_key_value_heads=key.shape[2],
        input_layout="BSND", scale=scaling, actual_seq_lengths_kv=kv_len)[0]


def naive_default_scale(query, key, value, scaling, n_rep):
    # Leaving scale out uses the kernel's default of 1.0.
    kv_len = [key.shape[1]] * key.shape[0]
    return torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=query.shape[2], num_key_value_heads=key.shape[2],
        input_layout="BSND", actual_seq_lengths_kv=kv_len)[0]
