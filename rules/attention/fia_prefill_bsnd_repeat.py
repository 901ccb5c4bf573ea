"""Eager attention whose GQA repeat happens in (B, S, N, D) layout, before the head transpose, becomes `npu_fused_infer_attention_score` in BSND layout on the un-repeated K/V.

What it does
    Finds the attention core of a prefill pass written on token-major tensors (Gemma's
    reference code): K/V heads are repeated on axis 2 of a (B, S, KVN, D) tensor
    (`torch.repeat_interleave(key, n_rep, dim=2)`), only then are q, k and v transposed
    to (B, N, S, D), and the core is `softmax((q * scale) @ kᵀ + mask) @ v`, transposed
    back. Repeating axis 2 before the transpose is the same GQA expansion as HF's
    `repeat_kv` on axis 1 after it. It proposes one
    `torch_npu.npu_fused_infer_attention_score(query, key, value, num_heads=N,
    num_key_value_heads=KVN, input_layout='BSND', scale=scale, atten_mask=mask_2048,
    sparse_mode=3)[0]` on the tensors as the model has them before the transposes, so
    neither the repeat nor the transposes stay.
Why
    Eager attention materialises the (B, N, S, S) scores and repeats K/V for every
    query group; with the repeat outside the attention core a match that starts at the
    transposed tensors would hand the repeated K/V to the kernel and keep the copy. The
    fused kernel reads the shared heads directly.
Example
    key = torch.repeat_interleave(key, n_rep, dim=2)
    value = torch.repeat_interleave(value, n_rep, dim=2)
    q = query.transpose(1, 2) * scaling
    scores = torch.matmul(q, key.transpose(1, 2).transpose(2, 3)) + mask
    probs = F.softmax(scores.float(), dim=-1).type_as(q)
    out = torch.matmul(probs, value.transpose(1, 2)).transpose(1, 2)
Use instead
    out = torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=N, num_key_value_heads=KVN, input_layout="BSND",
        scale=scaling, atten_mask=self.causal_mask_2048 if q_len > 1 else None, sparse_mode=3)[0]
Fix safety
    Needs prerequisites: the compressed causal mask, a (2048, 2048) bool buffer created
    once (the model's additive mask must be the causal one; padding masks need
    actual_seq_lengths). Pass `scale` explicitly (default 1.0). Checked as for
    attention.fia_prefill, with the BSND layout: N % KVN == 0, N / KVN <= 64 per rank,
    N * D < 65535 on the full path, head_dim limits, dtype float16/bfloat16.
    A decode step through the same code (one query token) gets no mask: FIA's
    incremental path ignores sparse_mode and would read the 2048 mask as a (B, KV_S)
    one, so the replacement passes atten_mask only while the query has more than one
    token; with a cache holding exactly the valid keys, that step sees all of them, as
    the eager code did.
References
    catalog/attention/npu_fused_infer_attention_score.toml; pitfalls.md 1.1, 1.3, 1.5;
    reference_chains.md module-attention-gqa.
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "attention.fia_prefill_bsnd_repeat",
    "title": "causal eager attention with the GQA repeat on (B, S, N, D) before the transpose (Gemma) -> FIA BSND, sparse_mode=3",
    "module": "attention",
    "apis": ["npu_fused_infer_attention_score"],
    "stages": ["prefill"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "causal_mask_2048",
         "en": "Create the compressed causal mask once: torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1) as a buffer.",
         "zh": "一次性创建压缩因果掩码缓冲区：torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)。",
         "mechanical": True},
    ],
    "checks": [
        "npu_fused_infer_attention_score:query_dtype",
        "npu_fused_infer_attention_score:gqa_heads_divisible",
        "npu_fused_infer_attention_score:gqa_ratio_le_64",
        "npu_fused_infer_attention_score:layout_supported",
        "npu_fused_infer_attention_score:prefill_batch_le_65536",
        "npu_fused_infer_attention_score:prefill_heads_le_256",
        "npu_fused_infer_attention_score:prefill_head_dim_le_512",
        "npu_fused_infer_attention_score:prefill_head_dim_multiple_16",
        "npu_fused_infer_attention_score:prefill_seq_le_20m",
        "npu_fused_infer_attention_score:prefill_bsh_heads_times_dim",
        "npu_fused_infer_attention_score:causal_use_compressed_mask",
        "npu_fused_infer_attention_score:causal_modes_drop_window",
        "npu_fused_infer_attention_score:anchored_modes_need_valid_keys",
        "npu_fused_infer_attention_score:compressed_mask_drops_padding",
        "npu_fused_infer_attention_score:no_learnable_sink",
        "npu_fused_infer_attention_score:causal_modes_need_causal_only_mask",
        "npu_fused_infer_attention_score:no_alibi_bias"
    ],
    "facts": {"stage": "prefill", "layout": "BSND", "sparse_mode": 3, "causal": True, "attention_sinks": False},
    "hints": {"class_names": ["GemmaAttention"]},
    "inputs": {
        "query": {"shape": ["B", "S", "N", "D"], "dtype": "act"},
        "key": {"shape": ["B", "S", "KVN", "D"], "dtype": "act"},
        "value": {"shape": ["B", "S", "KVN", "D"], "dtype": "act"},
        "attention_mask": {"shape": ["B", 1, "S", "S"], "dtype": "act", "init": "causal_additive"},
        "scaling": {"dtype": "param", "expr": "D ** -0.5"},
        "n_rep": {"dtype": "param", "expr": "N // KVN"},
    },
    "sizes": {"B": 2, "N": 8, "KVN": 2, "S": 9, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"optional": ["add"], "contains": ["attention.fia_prefill"],
              "explain": [{"when": "expected 2, found 1", "near_miss": "fixtures/fia_prefill_bsnd_repeat_nomatch_repeat_on_sequence.py"}]},
    "near_misses": [
        {"file": "fixtures/fia_prefill_bsnd_repeat_nomatch_repeat_on_sequence.py",
         "reason": "the repeat runs along the sequence axis (dim 1 of (B, S, N, D)), not the heads: not a GQA expansion"},
    ],
    "doc_zh": """GQA重复在(B, S, N, D)布局、头维转置之前完成的eager注意力，替换为BSND布局、作用于未重复K/V的npu_fused_infer_attention_score。

功能
    识别按token排列张量上写出的预填充注意力核心（Gemma参考实现）：K/V头在(B, S, KVN, D)张量的
    第2维上重复（torch.repeat_interleave(key, n_rep, dim=2)），之后q、k、v才转置为(B, N, S, D)，
    核心为softmax((q * scale) @ kᵀ + mask) @ v，再转置回来。转置前在第2维重复，与HF在转置后
    第1维上的repeat_kv是同一种GQA扩展。建议在模型转置之前的张量上调用
    torch_npu.npu_fused_infer_attention_score(query, key, value, num_heads=N,
    num_key_value_heads=KVN, input_layout='BSND', scale=scale, atten_mask=mask_2048,
    sparse_mode=3)[0]，重复和转置都不再保留。
原因
    eager注意力在HBM中物化(B, N, S, S)分数矩阵，并为每个query组重复K/V；重复位于注意力核心之外时，
    从转置后张量开始的匹配会把重复后的K/V交给内核并保留这次拷贝。融合内核直接读取共享的头。
示例
    key = torch.repeat_interleave(key, n_rep, dim=2)
    value = torch.repeat_interleave(value, n_rep, dim=2)
    q = query.transpose(1, 2) * scaling
    scores = torch.matmul(q, key.transpose(1, 2).transpose(2, 3)) + mask
    probs = F.softmax(scores.float(), dim=-1).type_as(q)
    out = torch.matmul(probs, value.transpose(1, 2)).transpose(1, 2)
替代写法
    out = torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=N, num_key_value_heads=KVN, input_layout="BSND",
        scale=scaling, atten_mask=self.causal_mask_2048 if q_len > 1 else None, sparse_mode=3)[0]
修复安全性
    需要前置改造：压缩因果掩码，一次性创建的(2048, 2048)布尔缓冲区（模型的加性掩码必须是因果掩码；
    padding掩码需要actual_seq_lengths）。显式传入scale（默认1.0）。检查项同attention.fia_prefill，
    布局为BSND：N % KVN == 0，每卡N / KVN <= 64，全量路径N * D < 65535，head_dim限制，dtype为
    float16/bfloat16。
    经同一段代码执行的解码步（query只有一个token）不传掩码：FIA的增量路径忽略sparse_mode，
    会把2048掩码当作(B, KV_S)掩码读取，因此替换代码仅在query多于一个token时传入atten_mask；
    当缓存恰好只含有效的键时，该步与eager代码一样看到全部键。
参考
    catalog/attention/npu_fused_infer_attention_score.toml；pitfalls.md 1.1、1.3、1.5；
    reference_chains.md module-attention-gqa。
""",
}


def search(query, key, value, attention_mask, scaling, n_rep):
    # Gemma: repeat on the token-major tensors, then transpose, scale folded into q.
    key_states = torch.repeat_interleave(key, n_rep, dim=2)
    value_states = torch.repeat_interleave(value, n_rep, dim=2)
    q = query.transpose(1, 2) * scaling
    k = key_states.transpose(1, 2)
    v = value_states.transpose(1, 2)
    scores = torch.matmul(q, k.transpose(2, 3)) + attention_mask
    probs = F.softmax(scores.float(), dim=-1).type_as(q)
    return torch.matmul(probs, v).transpose(1, 2)


def search_scaled_scores(query, key, value, attention_mask, scaling, n_rep):
    # The scale applied to the scores instead of the query.
    key_states = torch.repeat_interleave(key, n_rep, dim=2)
    value_states = torch.repeat_interleave(value, n_rep, dim=2)
    q = query.transpose(1, 2)
    k = key_states.transpose(1, 2)
    v = value_states.transpose(1, 2)
    scores = torch.matmul(q, k.transpose(2, 3)) * scaling + attention_mask
    probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(probs, v).transpose(1, 2)


def search_inline_causal(query, key, value, attention_mask, scaling, n_rep):
    # The causal mask built in the layer and aligned to the last key (a cached prefix
    # shifts it), as sparse_mode=3 aligns it; the attention_mask argument is unused.
    key_states = torch.repeat_interleave(key, repeats=n_rep, dim=2)
    value_states = torch.repeat_interleave(value, repeats=n_rep, dim=2)
    q = query.transpose(1, 2)
    k = key_states.transpose(1, 2)
    v = value_states.transpose(1, 2)
    scores = q @ k.transpose(-2, -1) * scaling
    q_len, kv_len = q.shape[-2], k.shape[-2]
    future = torch.ones(q_len, kv_len, dtype=torch.bool).triu(kv_len - q_len + 1)
    scores = scores.masked_fill(future, float("-inf"))
    probs = scores.softmax(dim=-1)
    return (probs @ v).transpose(1, 2)


def replace(query, key, value, attention_mask, scaling, n_rep):
    causal_mask_2048 = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    return torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=query.shape[2], num_key_value_heads=key.shape[2],
        input_layout="BSND", scale=scaling, atten_mask=causal_mask_2048 if query.shape[1] > 1 else None,
        sparse_mode=3)[0]
