"""Decode-step attention over a KV cache becomes `npu_fused_infer_attention_score` with `actual_seq_lengths_kv`.

What it does
    Finds the attention core of a decode step: one new query token per sequence
    attending to a preallocated (static) cache whose valid length differs per sequence,
    with the invalid tail masked out (`arange(max_len) >= kv_len` → large negative), GQA
    via `repeat_kv`. It proposes `torch_npu.npu_fused_infer_attention_score(q, k_cache,
    v_cache, num_heads=N, num_key_value_heads=KVN, input_layout='BNSD', scale=scale,
    actual_seq_lengths_kv=kv_len)[0]`: the lengths replace the mask.
Why
    Decode is memory-bound: the eager path reads the whole cache, repeats K/V per query
    group, writes scores and probabilities. The fused kernel reads each KV head once and
    stops at each sequence's length.
Example
    key_states = repeat_kv(past_key, n_rep)
    scores = torch.matmul(q, key_states.transpose(2, 3)) * scaling
    scores = scores.masked_fill(positions[None, :] >= kv_len[:, None], min_value)
    out = torch.matmul(scores.softmax(-1), repeat_kv(past_value, n_rep))
Use instead
    out = torch_npu.npu_fused_infer_attention_score(
        q, past_key, past_value, num_heads=N, num_key_value_heads=KVN, input_layout="BNSD",
        scale=scaling, actual_seq_lengths_kv=kv_len)[0]
Fix safety
    Needs prerequisites: a static or paged cache (kv_cache.static_cache_prerequisite)
    and a per-sequence length tensor maintained by the decode loop. Full attention may
    omit sparse_mode in decode; with query length 1 the kernel ignores sparse_mode and
    pre_tokens, so a sliding window is NOT applied here (limit the KV range instead,
    catalog decode_window_not_applied). Checked: decode batch/heads/KV length limits,
    GQA ratio <= 64 after TP, head_dim <= 512, paged block_size when a block table is
    used. Pass scale explicitly (default 1.0).
References
    catalog/attention/npu_fused_infer_attention_score.toml; pitfalls.md 1.6, 1.7;
    reference_chains.md module-attention-gqa, model-infer-kvcache.
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "attention.fia_decode",
    "title": "decode attention over a static cache with per-sequence lengths -> FIA actual_seq_lengths_kv",
    "module": "attention",
    "apis": ["npu_fused_infer_attention_score"],
    "stages": ["decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "static_kv_cache",
         "en": "Keep K/V in a preallocated static or paged cache (see kv_cache.static_cache_prerequisite).",
         "zh": "把K/V保存在预分配的静态或分页缓存中（见kv_cache.static_cache_prerequisite）。",
         "mechanical": False},
        {"id": "kv_lengths_tensor",
         "en": "Maintain the per-sequence valid KV length (kv_len) in the decode loop and pass it as actual_seq_lengths_kv.",
         "zh": "在解码循环中维护每条序列的有效KV长度（kv_len），并作为actual_seq_lengths_kv传入。",
         "mechanical": True},
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
        "npu_fused_infer_attention_score:paged_decode_block_size",
        "npu_fused_infer_attention_score:no_learnable_sink",
        "npu_fused_infer_attention_score:no_alibi_bias"
    ],
    # the pattern is a plain softmax over the scores: a sink logit joined to
    # them (GPT-OSS) would not match, so the matched chain has none
    "facts": {"stage": "decode", "layout": "BNSD", "q_seq_len": 1, "attention_sinks": False},
    "inputs": {
        "query": {"shape": ["B", "N", 1, "D"], "dtype": "act"},
        "key_cache": {"shape": ["B", "KVN", "SMAX", "D"], "dtype": "act"},
        "value_cache": {"shape": ["B", "KVN", "SMAX", "D"], "dtype": "act"},
        "kv_len": {"shape": ["B"], "dtype": "int64", "init": "randint", "low": 1, "high": "SMAX + 1"},
        "scaling": {"dtype": "param", "expr": "D ** -0.5"},
        "n_rep": {"dtype": "param", "expr": "N // KVN"},
    },
    "sizes": {"B": 3, "N": 8, "KVN": 2, "SMAX": 16, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"optional": ["repeat_interleave"],
              "lookalikes": {"lookalike_growing_cat": {
                  "near_miss": "fixtures/fia_decode_nomatch_growing_cat.py",
                  "inputs": {"key_states": {"shape": ["B", "KVN", 1, "D"], "dtype": "float32"},
                             "value_states": {"shape": ["B", "KVN", 1, "D"], "dtype": "float32"}}}}},
    "near_misses": [
        {"file": "fixtures/fia_decode_nomatch_growing_cat.py",
         "reason": "the cache grows with torch.cat each step: no fixed buffer to pass; first apply kv_cache.static_cache_prerequisite"},
    ],
    "doc_zh": """对KV缓存的解码步注意力替换为带actual_seq_lengths_kv的npu_fused_infer_attention_score。

功能
    识别解码步的注意力核心：每条序列一个新查询token，关注预分配（静态）缓存，各序列有效长度
    不同、无效尾部被掩码（arange(max_len) >= kv_len → 大负数），GQA通过repeat_kv实现。建议
    改为torch_npu.npu_fused_infer_attention_score(q, k_cache, v_cache, num_heads=N,
    num_key_value_heads=KVN, input_layout='BNSD', scale=scale, actual_seq_lengths_kv=kv_len)[0]：
    用长度代替掩码。
原因
    解码受访存限制：eager路径读取整个缓存、为每个查询组重复K/V、写出分数和概率。融合内核每个
    KV头只读一次，并在每条序列的长度处停止。
示例
    key_states = repeat_kv(past_key, n_rep)
    scores = torch.matmul(q, key_states.transpose(2, 3)) * scaling
    scores = scores.masked_fill(positions[None, :] >= kv_len[:, None], min_value)
    out = torch.matmul(scores.softmax(-1), repeat_kv(past_value, n_rep))
替代写法
    out = torch_npu.npu_fused_infer_attention_score(
        q, past_key, past_value, num_heads=N, num_key_value_heads=KVN, input_layout="BNSD",
        scale=scaling, actual_seq_lengths_kv=kv_len)[0]
修复安全性
    需要前置改造：静态或分页缓存（kv_cache.static_cache_prerequisite），以及由解码循环维护的
    每序列长度张量。全注意力在解码时可省略sparse_mode；查询长度为1时内核忽略sparse_mode和
    pre_tokens，因此此处不会应用滑动窗口（应改为限制KV范围，见目录decode_window_not_applied）。
    检查项：解码的batch/头数/KV长度上限，TP后GQA比例<= 64，head_dim <= 512，使用块表时的分页
    block_size。须显式传入scale（默认1.0）。
参考
    catalog/attention/npu_fused_infer_attention_score.toml；pitfalls.md 1.6、1.7；
    reference_chains.md module-attention-gqa、model-infer-kvcache。
""",
}


def search(query, key_cache, value_cache, kv_len, scaling, n_rep):
    key_states = torch.repeat_interleave(key_cache, dim=1, repeats=n_rep)
    value_states = torch.repeat_interleave(value_cache, dim=1, repeats=n_rep)
    scores = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    positions = torch.arange(key_cache.shape[2])
    invalid = (positions[None, :] >= kv_len[:, None])[:, None, None, :]
    scores = scores.masked_fill(invalid, torch.finfo(scores.dtype).min)
    probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(probs, value_states)


def search_additive_mask(query, key_cache, value_cache, kv_len, scaling, n_rep):
    b, kvh, s, d = key_cache.shape
    k = key_cache[:, :, None].expand(b, kvh, n_rep, s, d).reshape(b, kvh * n_rep, s, d)
    v = value_cache[:, :, None].expand(b, kvh, n_rep, s, d).reshape(b, kvh * n_rep, s, d)
    mask = torch.zeros(b, 1, 1, s, dtype=query.dtype)
    mask = mask.masked_fill(torch.arange(s)[None, None, None, :] >= kv_len[:, None, None, None],
                            torch.finfo(query.dtype).min)
    attn = torch.softmax((query @ k.transpose(-1, -2)) * scaling + mask, dim=-1, dtype=torch.float32)
    return attn.to(query.dtype) @ v


def lookalike_growing_cat(query, key_cache, value_cache, kv_len, scaling, n_rep, key_states=None, value_states=None):
    # The step's keys and values joined to the past ones with torch.cat: the
    # cache is a new tensor each step, every slot of it valid, so there is no
    # preallocated buffer and no per-sequence length to pass.
    keys = torch.cat([key_cache, key_states], dim=-2)
    values = torch.cat([value_cache, value_states], dim=-2)
    keys = torch.repeat_interleave(keys, dim=1, repeats=n_rep)
    values = torch.repeat_interleave(values, dim=1, repeats=n_rep)
    probs = torch.softmax(torch.matmul(query, keys.transpose(2, 3)) * scaling, dim=-1)
    return torch.matmul(probs, values)


def replace(query, key_cache, value_cache, kv_len, scaling, n_rep):
    return torch_npu.npu_fused_infer_attention_score(
        query, key_cache, value_cache, num_heads=query.shape[1],
        num_key_value_heads=key_cache.shape[1], input_layout="BNSD", scale=scaling,
        actual_seq_lengths_kv=kv_len.tolist())[0]


def naive_without_lengths(query, key_cache, value_cache, kv_len, scaling, n_rep):
    # Without actual_seq_lengths_kv the kernel attends to the stale cache tail.
    return torch_npu.npu_fused_infer_attention_score(
        query, key_cache, value_cache, num_heads=query.shape[1],
        num_key_value_heads=key_cache.shape[1], input_layout="BNSD", scale=scaling)[0]
