"""Decode attention over a paged KV cache (block table) becomes FIA with `block_table` and `actual_seq_lengths_kv`.

What it does
    Finds decode attention that gathers each sequence's keys and values from a block
    pool through a block table (`key_cache[block_table].flatten(1, 2)`), masks the
    positions at or beyond each sequence's length and runs softmax attention with GQA.
    It proposes `torch_npu.npu_fused_infer_attention_score(q, key_cache, value_cache,
    block_table=block_table, block_size=BS, actual_seq_lengths_kv=kv_len,
    input_layout='BSND', ...)[0]` with the cache viewed as `(num_blocks, block_size,
    KVN * D)`.
Why
    The gather copies every sequence's whole history out of the pool each step before
    the attention even starts. The fused kernel reads the blocks in place through the
    table (PagedAttention), once per KV head.
Example
    k = key_cache[block_table].flatten(1, 2).transpose(1, 2)
    k = k.repeat_interleave(n_rep, dim=1)
    scores = (q.transpose(1, 2) @ k.transpose(-1, -2)) * scaling
    scores = scores.masked_fill(positions >= kv_len[:, None], min_value)
Use instead
    out = torch_npu.npu_fused_infer_attention_score(
        q, key_cache.view(num_blocks, block_size, -1), value_cache.view(num_blocks, block_size, -1),
        num_heads=N, num_key_value_heads=KVN, input_layout="BSND", scale=scaling,
        block_table=block_table, block_size=block_size, actual_seq_lengths_kv=kv_len)[0]
Fix safety
    Needs prerequisites: block_table as int32 (B, max_blocks) and kv_len kept by the
    scheduler. Checked: with query length 1 the block size is a multiple of 16 and at
    most 512 (with query length > 1, a multiple of 128); actual_seq_lengths_kv is
    mandatory; KVN * D of the 3-D cache view; GQA ratio after TP; head_dim <= 512. The
    cache write is kv_cache.paged_cache_write. TND (with cumulative query lengths) is the
    layout of the expert ports for mixed prefill/decode batches.
References
    catalog/attention/npu_fused_infer_attention_score.toml (paged_decode_block_size,
    paged_bsh_cache_kvn_times_d); pitfalls.md 1.7; reference_chains.md model-infer-kvcache.
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "attention.fia_decode_paged",
    "title": "decode attention gathering K/V through a block table -> FIA block_table + actual_seq_lengths_kv",
    "module": "attention",
    "apis": ["npu_fused_infer_attention_score"],
    "stages": ["decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "block_table_int32",
         "en": "Pass block_table as an int32 (batch, max_blocks) tensor and the per-sequence KV lengths as actual_seq_lengths_kv.",
         "zh": "以int32的(batch, max_blocks)张量传入block_table，并把每序列KV长度作为actual_seq_lengths_kv传入。",
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
        "npu_fused_infer_attention_score:paged_decode_block_size",
        "npu_fused_infer_attention_score:paged_decode_block_size_int8",
        "npu_fused_infer_attention_score:paged_bsh_cache_kvn_times_d",
        "npu_fused_infer_attention_score:no_alibi_bias"
    ],
    # the pattern is a plain softmax over the scores: a sink logit joined to
    # them (GPT-OSS) would not match, so the matched chain has none
    "facts": {"stage": "decode", "layout": "BSND", "paged": True, "q_seq_len": 1, "attention_sinks": False},
    "inputs": {
        "query": {"shape": ["B", 1, "N", "D"], "dtype": "act"},
        "key_cache": {"shape": ["NB", "BS", "KVN", "D"], "dtype": "act"},
        "value_cache": {"shape": ["NB", "BS", "KVN", "D"], "dtype": "act"},
        "block_table": {"shape": ["B", "MB"], "dtype": "int64", "init": "unique_randint", "high": "NB"},
        "kv_len": {"shape": ["B"], "dtype": "int64", "init": "randint", "low": 1, "high": "MB * BS + 1"},
        "scaling": {"dtype": "param", "expr": "D ** -0.5"},
        "n_rep": {"dtype": "param", "expr": "N // KVN"},
    },
    "sizes": {"B": 3, "N": 8, "KVN": 2, "D": 64, "NB": 12, "BS": 16, "MB": 3},
    "dtypes": ["float32", "bfloat16"],
    "match": {"optional": ["repeat_interleave"],
              "lookalikes": {"lookalike_prefix_cache_hit": {
                  "near_miss": "fixtures/fia_decode_paged_nomatch_prefix_cache_hit.py",
                  "inputs": {"prefix_key": {"shape": ["B", "KVN", 5, "D"], "dtype": "float32"},
                             "prefix_value": {"shape": ["B", "KVN", 5, "D"], "dtype": "float32"}}}}},
    "near_misses": [
        {"file": "fixtures/fia_decode_paged_nomatch_prefix_cache_hit.py",
         "reason": "the gathered blocks are concatenated with a separately stored prefix: the table does not describe the whole sequence"},
    ],
    "doc_zh": """对分页KV缓存（块表）的解码注意力替换为带block_table与actual_seq_lengths_kv的FIA。

功能
    识别通过块表从块池中取出每条序列的key和value（key_cache[block_table].flatten(1, 2)）、屏蔽
    每条序列长度及之后的位置、再做带GQA的softmax注意力的解码写法。建议改为
    torch_npu.npu_fused_infer_attention_score(q, key_cache, value_cache, block_table=block_table,
    block_size=BS, actual_seq_lengths_kv=kv_len, input_layout='BSND', ...)[0]，缓存视为
    (num_blocks, block_size, KVN * D)。
原因
    在注意力开始之前，gather每步都要把每条序列的全部历史从块池中拷贝出来。融合内核通过块表原地
    读取块（PagedAttention），每个KV头只读一次。
示例
    k = key_cache[block_table].flatten(1, 2).transpose(1, 2)
    k = k.repeat_interleave(n_rep, dim=1)
    scores = (q.transpose(1, 2) @ k.transpose(-1, -2)) * scaling
    scores = scores.masked_fill(positions >= kv_len[:, None], min_value)
替代写法
    out = torch_npu.npu_fused_infer_attention_score(
        q, key_cache.view(num_blocks, block_size, -1), value_cache.view(num_blocks, block_size, -1),
        num_heads=N, num_key_value_heads=KVN, input_layout="BSND", scale=scaling,
        block_table=block_table, block_size=block_size, actual_seq_lengths_kv=kv_len)[0]
修复安全性
    需要前置改造：由调度器维护int32的(B, max_blocks)块表和kv_len。检查项：查询长度为1时block_size
    为16的倍数且不超过512（查询长度大于1时为128的倍数）；actual_seq_lengths_kv必须提供；三维缓存
    视图的KVN * D；TP后的GQA比例；head_dim <= 512。缓存写入见kv_cache.paged_cache_write。对混合
    预填充/解码批次，专家移植使用TND（累加查询长度）布局。
参考
    catalog/attention/npu_fused_infer_attention_score.toml（paged_decode_block_size、
    paged_bsh_cache_kvn_times_d）；pitfalls.md 1.7；reference_chains.md model-infer-kvcache。
""",
}


def search(query, key_cache, value_cache, block_table, kv_len, scaling, n_rep):
    k = key_cache[block_table].flatten(1, 2).transpose(1, 2)
    v = value_cache[block_table].flatten(1, 2).transpose(1, 2)
    k = k.repeat_interleave(n_rep, dim=1)
    v = v.repeat_interleave(n_rep, dim=1)
    scores = torch.matmul(query.transpose(1, 2), k.transpose(-1, -2)) * scaling
    positions = torch.arange(k.shape[2])
    invalid = (positions[None, :] >= kv_len[:, None])[:, None, None, :]
    scores = scores.masked_fill(invalid, torch.finfo(scores.dtype).min)
    probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(probs, v).transpose(1, 2)


def search_index_select(query, key_cache, value_cache, block_table, kv_len, scaling, n_rep):
    b, max_blocks = block_table.shape
    k = torch.index_select(key_cache, 0, block_table.reshape(-1))
    v = torch.index_select(value_cache, 0, block_table.reshape(-1))
    k = k.reshape(b, max_blocks * key_cache.shape[1], *key_cache.shape[2:])
    v = v.reshape(b, max_blocks * value_cache.shape[1], *value_cache.shape[2:])
    k = k.transpose(1, 2).repeat_interleave(n_rep, dim=1)
    v = v.transpose(1, 2).repeat_interleave(n_rep, dim=1)
    s = (query.transpose(1, 2) @ k.transpose(-1, -2)) * scaling
    s = s.masked_fill((torch.arange(k.shape[2])[None, :] >= kv_len[:, None])[:, None, None, :],
                      float("-inf"))
    return (torch.softmax(s.float(), dim=-1).to(query.dtype) @ v).transpose(1, 2)


def lookalike_prefix_cache_hit(query, key_cache, value_cache, block_table, kv_len, scaling, n_rep,
                               prefix_key=None, prefix_value=None):
    # A prefix kept outside the paged cache (a prefix-cache hit held as its own
    # tensors) joined in front of the gathered blocks: the block table covers only
    # the tokens after it.
    k = torch.cat([prefix_key, key_cache[block_table].flatten(1, 2).transpose(1, 2)], dim=2)
    v = torch.cat([prefix_value, value_cache[block_table].flatten(1, 2).transpose(1, 2)], dim=2)
    k = k.repeat_interleave(n_rep, dim=1)
    v = v.repeat_interleave(n_rep, dim=1)
    scores = torch.matmul(query.transpose(1, 2), k.transpose(-1, -2)) * scaling
    return torch.matmul(torch.softmax(scores, dim=-1), v)


def replace(query, key_cache, value_cache, block_table, kv_len, scaling, n_rep):
    num_blocks, block_size = key_cache.shape[0], key_cache.shape[1]
    return torch_npu.npu_fused_infer_attention_score(
        query, key_cache.view(num_blocks, block_size, -1), value_cache.view(num_blocks, block_size, -1),
        num_heads=query.shape[2], num_key_value_heads=key_cache.shape[2], input_layout="BSND",
        scale=scaling, block_table=block_table.to(torch.int32), block_size=block_size,
        actual_seq_lengths_kv=kv_len.tolist())[0]


def naive_lengths_as_blocks(query, key_cache, value_cache, block_table, kv_len, scaling, n_rep):
    # Passing the number of blocks instead of tokens cuts every sequence short.
    num_blocks, block_size = key_cache.shape[0], key_cache.shape[1]
    blocks = [(n + block_size - 1) // block_size for n in kv_len.tolist()]
    return torch_npu.npu_fused_infer_attention_score(
        query, key_cache.view(num_blocks, block_size, -1), value_cache.view(num_blocks, block_size, -1),
        num_heads=query.shape[2], num_key_value_heads=key_cache.shape[2], input_layout="BSND",
        scale=scaling, block_table=block_table.to(torch.int32), block_size=block_size,
        actual_seq_lengths_kv=blocks)[0]
