"""The eager/SDPA attention core HF runs for both stages becomes, in decode, `npu_fused_infer_attention_score` with actual_seq_lengths_kv.

What it does
    HF-style models run one attention function for prefill and decode: `repeat_kv`,
    `softmax(Q Kᵀ * scale + attention_mask) V` (or SDPA with `attn_mask`; the mask added
    before the scale, CodeGen; the scores as `baddbmm` over zeros, older GPT-NeoX), the
    mask an additive tensor built outside the layer. In a decode step the query has one token
    and the mask only blanks each sequence's padded tail. This rule names that decode
    form of the same chain: one `torch_npu.npu_fused_infer_attention_score(q, k, v,
    num_heads=N, num_key_value_heads=KVN, input_layout='BNSD', scale=scale,
    actual_seq_lengths_kv=kv_len)[0]` on the un-repeated cache, with the per-sequence
    valid lengths in place of the mask.
Why
    Decode is memory-bound: the eager path repeats the whole cache per query group and
    writes scores and probabilities for every step. The fused kernel reads each KV head
    once and stops at each sequence's length.
Example
    key_states = repeat_kv(past_key, n_rep)
    scores = torch.matmul(query, key_states.transpose(2, 3)) * scaling + attention_mask
    probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    out = torch.matmul(probs, repeat_kv(past_value, n_rep)).transpose(1, 2)
Use instead
    out = torch_npu.npu_fused_infer_attention_score(
        query, past_key, past_value, num_heads=N, num_key_value_heads=KVN,
        input_layout="BNSD", scale=scaling, actual_seq_lengths_kv=kv_len)[0].transpose(1, 2)
Fix safety
    Needs prerequisites. The additive mask says which keys count only as numbers; the
    kernel wants lengths, so the decode loop keeps kv_len (valid keys per sequence) and
    the cache is a fixed buffer (kv_cache.static_cache_prerequisite), not one that
    grows behind `Cache.update`. Lengths describe a valid prefix: a left-padded batch
    needs its padding moved or stays eager. With query length 1 the kernel ignores
    sparse_mode and pre_tokens, so a sliding window is not applied (catalog
    decode_window_not_applied). Pass scale explicitly (default 1.0).
References
    catalog/attention/npu_fused_infer_attention_score.toml; pitfalls.md 1.1, 1.6;
    reference_chains.md module-attention-gqa.
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "attention.fia_decode_additive_mask",
    "title": "HF eager/SDPA core with an additive mask, decode step -> FIA actual_seq_lengths_kv",
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
         "en": "Maintain the per-sequence valid KV length (kv_len) in the decode loop and pass it as actual_seq_lengths_kv instead of the additive mask.",
         "zh": "在解码循环中维护每条序列的有效KV长度（kv_len），以actual_seq_lengths_kv传入，取代加性掩码。",
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
    # a plain softmax over the scores: no sink logit joins them
    "facts": {"stage": "decode", "layout": "BNSD", "q_seq_len": 1, "attention_sinks": False},
    "hints": {"class_names": ["Attention", "LlamaAttention", "Qwen2Attention", "Qwen3Attention"]},
    "inputs": {
        "query": {"shape": ["B", "N", 1, "D"], "dtype": "act"},
        "key": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "value": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "attention_mask": {"shape": ["B", 1, 1, "S"], "dtype": "act", "init": "padded_additive"},
        "scaling": {"dtype": "param", "expr": "D ** -0.5"},
        "n_rep": {"dtype": "param", "expr": "N // KVN"},
    },
    "sizes": {"B": 3, "N": 8, "KVN": 2, "S": 16, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    "min_torch": {"search_sdpa": "2.1"},
    "match": {"optional": ["repeat_interleave"],
              "explain": [{"when": "expected transpose(...), found input", "near_miss": "fixtures/fia_decode_additive_mask_nomatch_transposed_key_cache.py"}]},
    "near_misses": [
        {"file": "fixtures/fia_decode_additive_mask_nomatch_transposed_key_cache.py",
         "reason": "the key cache is kept transposed ([B, N, D, S]): FIA reads K as [B, N, S, D], so the cache layout changes first"},
    ],
    "doc_zh": """HF在两个阶段共用的eager/SDPA注意力核心，在解码阶段替换为带actual_seq_lengths_kv的npu_fused_infer_attention_score。

功能
    HF写法的模型在预填充和解码中运行同一个注意力函数：repeat_kv，然后
    softmax(Q Kᵀ * scale + attention_mask) V（或带attn_mask的SDPA；CodeGen在缩放之前加掩码；较早的GPT-NeoX
    用对零张量的baddbmm求分数），掩码是层外构造的加性张量。解码步中查询只有一个token，掩码只屏蔽每条序列填充的尾部。本规则给出同一条链的解码
    形式：在未重复的缓存上调用一次torch_npu.npu_fused_infer_attention_score(q, k, v,
    num_heads=N, num_key_value_heads=KVN, input_layout='BNSD', scale=scale,
    actual_seq_lengths_kv=kv_len)[0]，用每条序列的有效长度代替掩码。
原因
    解码受访存限制：eager路径每一步都为每个查询组重复整个缓存，并写出分数和概率。融合内核
    每个KV头只读一次，并在每条序列的长度处停止。
示例
    key_states = repeat_kv(past_key, n_rep)
    scores = torch.matmul(query, key_states.transpose(2, 3)) * scaling + attention_mask
    probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    out = torch.matmul(probs, repeat_kv(past_value, n_rep)).transpose(1, 2)
替代写法
    out = torch_npu.npu_fused_infer_attention_score(
        query, past_key, past_value, num_heads=N, num_key_value_heads=KVN,
        input_layout="BNSD", scale=scaling, actual_seq_lengths_kv=kv_len)[0].transpose(1, 2)
修复安全性
    需要前置改造。加性掩码只以数值表示哪些key有效；内核需要长度，因此解码循环要维护kv_len
    （每条序列的有效key数），缓存须是固定缓冲区（kv_cache.static_cache_prerequisite），而不是
    在Cache.update背后增长的缓存。长度描述的是有效前缀：左填充的批次须先移动填充，否则保留
    eager实现。query长度为1时内核忽略sparse_mode和pre_tokens，滑动窗口不会生效（catalog
    decode_window_not_applied）。须显式传入scale（默认1.0）。
参考
    catalog/attention/npu_fused_infer_attention_score.toml；pitfalls.md 1.1、1.6；
    reference_chains.md module-attention-gqa。
""",
}


def search(query, key, value, attention_mask, scaling, n_rep):
    # The same eager spelling fia_prefill reads (repeat_kv, `/ sqrt(d)`, transpose(-2, -1)
    # are seen the same way); here the mask add is required: it carries the lengths.
    key_states = torch.repeat_interleave(key, n_rep, dim=1)
    value_states = torch.repeat_interleave(value, n_rep, dim=1)
    logits = torch.matmul(query, key_states.transpose(2, 3)) * scaling + attention_mask
    probs = F.softmax(logits, dim=-1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(probs, value_states).transpose(1, 2)


def search_mask_then_scale(query, key, value, attention_mask, scaling, n_rep):
    # CodeGen: the mask added before the scale; a masked key stays at the dtype's minimum
    # times the scale, still far below any score.
    key_states = torch.repeat_interleave(key, n_rep, dim=1)
    value_states = torch.repeat_interleave(value, n_rep, dim=1)
    logits = (torch.matmul(query, key_states.transpose(2, 3)) + attention_mask) * scaling
    probs = F.softmax(logits, dim=-1).to(value.dtype)
    return torch.matmul(probs, value_states).transpose(1, 2)


def search_zeros_baddbmm(query, key, value, attention_mask, scaling, n_rep):
    # GPT-NeoX (older HF form): the scaled scores as baddbmm over a zero tensor, beta 1.
    key_states = torch.repeat_interleave(key, n_rep, dim=1)
    value_states = torch.repeat_interleave(value, n_rep, dim=1)
    bsz, heads, q_len, head_dim = query.shape
    kv_len = key_states.shape[2]
    q = query.view(bsz * heads, q_len, head_dim)
    k = key_states.view(bsz * heads, kv_len, head_dim)
    scores = torch.zeros(bsz * heads, q_len, kv_len, dtype=q.dtype, device=k.device)
    scores = torch.baddbmm(scores, q, k.transpose(1, 2), beta=1.0, alpha=scaling)
    scores = scores.view(bsz, heads, q_len, -1) + attention_mask
    probs = F.softmax(scores, dim=-1).to(value.dtype)
    return torch.matmul(probs, value_states).transpose(1, 2)


def search_sdpa(query, key, value, attention_mask, scaling, n_rep):
    k = torch.repeat_interleave(key, dim=1, repeats=n_rep)
    v = torch.repeat_interleave(value, dim=1, repeats=n_rep)
    out = F.scaled_dot_product_attention(query, k, v, attn_mask=attention_mask, scale=scaling)
    return out.transpose(1, 2)


def replace(query, key, value, attention_mask, scaling, n_rep):
    # The decode loop knows kv_len; here it is read back from the padded mask's valid prefix.
    kv_len = (attention_mask[:, 0, -1, :] == 0).sum(-1)
    out = torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=query.shape[1], num_key_value_heads=key.shape[1],
        input_layout="BNSD", scale=scaling, actual_seq_lengths_kv=kv_len.tolist())[0]
    return out.transpose(1, 2)


def naive_without_lengths(query, key, value, attention_mask, scaling, n_rep):
    # Dropping the mask without lengths attends to the padded tail.
    out = torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=query.shape[1], num_key_value_heads=key.shape[1],
        input_layout="BNSD", scale=scaling)[0]
    return out.transpose(1, 2)
