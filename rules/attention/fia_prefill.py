"""Eager or SDPA causal attention in prefill becomes `npu_fused_infer_attention_score` with sparse_mode=3.

What it does
    Finds the attention core of a prefill pass: optional `repeat_kv` for GQA, then
    `softmax(Q Kᵀ * scale + causal_mask) V` (HF eager attention), or
    `F.scaled_dot_product_attention(..., is_causal=True / attn_mask=...)`, or the
    flash-attention dispatch that wraps them. The scale may be folded into the query
    before the score matmul (`(q * scale) @ kᵀ`, Gemma style), the mask may join the
    raw scores before the scale (`(q @ kᵀ + mask) / sqrt(d)`, CodeGen: HF masks hold 0 or
    the dtype's minimum, which stays masked once scaled), the scores may come from
    `baddbmm` over a zero tensor with alpha = scale (older GPT-NeoX), and an SDPA dropout
    that is 0.0 outside training passes. It proposes one
    `torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=N,
    num_key_value_heads=KVN, input_layout='BNSD', scale=scale,
    atten_mask=mask_2048, sparse_mode=3)[0]` on the un-repeated K/V.
Why
    Eager attention materialises the (B, N, S, S) score matrix in HBM two or three
    times (scores, masked scores, probabilities) and repeats K/V for every query group.
    The fused kernel tiles over the sequence with the softmax on chip and reads the
    shared K/V heads directly: memory goes from O(S²) to O(S).
Example
    k_full, v_full = expand_kv_heads(key, n_rep), expand_kv_heads(value, n_rep)
    logits = torch.matmul(query, k_full.transpose(2, 3)) * scaling + causal_mask
    probs = F.softmax(logits, dim=-1, dtype=torch.float32).to(query.dtype)
    out = torch.matmul(probs, v_full).transpose(1, 2)
Use instead
    out = torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=N, num_key_value_heads=KVN, input_layout="BNSD",
        scale=scaling, atten_mask=self.causal_mask_2048 if q_len > 1 else None, sparse_mode=3)[0].transpose(1, 2)
Fix safety
    Needs prerequisites: the compressed causal mask is a (2048, 2048) bool buffer
    (`triu(ones, 1)`, True = masked) created once; a full S x S mask with sparse_mode=0
    is a documented silent-error trap (pitfalls 1.3, 1.5). Pass `scale` explicitly: its
    default is 1.0, not head_dim^-0.5. Checked: N % KVN == 0 and N/KVN <= 64 on the
    per-rank heads after TP, head_dim per layout (BNSD here; TND only 64/128/192),
    dtype float16/bfloat16. Padding masks (left-padded batches) are not causal-only: they
    need actual_seq_lengths or stay eager.
    A decode step through the same code (one query token) gets no mask: FIA's
    incremental path ignores sparse_mode and would read the 2048 mask as a (B, KV_S)
    one, so the replacement passes atten_mask only while the query has more than one
    token; with a cache holding exactly the valid keys, that step sees all of them, as
    the eager code did.
References
    catalog/attention/npu_fused_infer_attention_score.toml; pitfalls.md 1.1, 1.3, 1.5,
    1.6; reference_chains.md module-attention-gqa.
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "attention.fia_prefill",
    "title": "causal eager/SDPA attention (prefill, GQA via repeat_kv) -> FIA sparse_mode=3 with the 2048x2048 mask",
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
        "npu_fused_infer_attention_score:causal_use_compressed_mask",
        "npu_fused_infer_attention_score:causal_modes_drop_window",
        "npu_fused_infer_attention_score:anchored_modes_need_valid_keys",
        "npu_fused_infer_attention_score:compressed_mask_drops_padding",
        "npu_fused_infer_attention_score:non_causal_avoid_tnd",
        "npu_fused_infer_attention_score:tnd_head_dims",
        "npu_fused_infer_attention_score:no_learnable_sink",
        "npu_fused_infer_attention_score:causal_modes_need_causal_only_mask",
        "npu_fused_infer_attention_score:no_alibi_bias"
    ],
    # the pattern is a plain softmax over the scores: a sink logit joined to
    # them (GPT-OSS) would not match, so the matched chain has none
    "facts": {"stage": "prefill", "layout": "BNSD", "sparse_mode": 3, "causal": True, "attention_sinks": False},
    "hints": {"class_names": ["Attention", "LlamaAttention", "Qwen2Attention", "Qwen3Attention"]},
    "inputs": {
        "query": {"shape": ["B", "N", "S", "D"], "dtype": "act"},
        "key": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "value": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "attention_mask": {"shape": ["B", 1, "S", "S"], "dtype": "act", "init": "causal_additive"},
        "scaling": {"dtype": "param", "expr": "D ** -0.5"},
        "n_rep": {"dtype": "param", "expr": "N // KVN"},
    },
    "sizes": {"B": 2, "N": 8, "KVN": 2, "S": 9, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    "min_torch": {"search_sdpa": "2.1", "search_sdpa_is_causal": "2.1"},
    "match": {"optional": ["repeat_interleave", "add"],
              "explain": [{"when": "has an argument dropout_p", "near_miss": "fixtures/fia_prefill_nomatch_sdpa_dropout_always.py"}],
              "lookalikes": {"lookalike_no_softmax": "fixtures/fia_prefill_nomatch_no_softmax.py",
                             "lookalike_softcap": {
                                 "near_miss": "fixtures/fia_prefill_nomatch_softcap.py",
                                 "inputs": {"softcap": {"dtype": "param", "value": 1.0}}}}},
    "near_misses": [
        {"file": "fixtures/fia_prefill_nomatch_no_softmax.py",
         "reason": "the scores are not normalised by a softmax over the keys (linear attention): not an attention core"},
        {"file": "fixtures/fia_prefill_nomatch_softcap.py",
         "reason": "the scores pass through a tanh soft-cap before the softmax: FIA has no soft-capping"},
        {"file": "fixtures/fia_prefill_nomatch_sdpa_dropout_always.py",
         "reason": "SDPA applies dropout with a fixed probability, in eval mode too: FIA has no dropout"},
    ],
    "doc_zh": """预填充阶段的eager或SDPA因果注意力替换为sparse_mode=3的npu_fused_infer_attention_score。

功能
    识别预填充中的注意力核心：GQA时可选的repeat_kv，然后softmax(Q Kᵀ * scale + causal_mask) V
    （HF eager注意力），或F.scaled_dot_product_attention(..., is_causal=True / attn_mask=...)，
    或包装它们的flash-attention分发。缩放也可以在分数矩阵乘之前乘到查询上（Gemma写法
    (q * scale) @ kᵀ），掩码也可以在缩放之前加到原始分数上（CodeGen写法(q @ kᵀ + mask) / sqrt(d)：
    HF掩码取0或dtype最小值，缩放后仍是屏蔽），分数也可以由对零张量的baddbmm得到、alpha即缩放
    （较早的GPT-NeoX写法），仅在训练时生效的SDPA dropout（推理时为0.0）不妨碍匹配。建议在未重复的K/V上调用一次
    torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=N, num_key_value_heads=KVN,
    input_layout='BNSD', scale=scale, atten_mask=mask_2048, sparse_mode=3)[0]。
原因
    eager注意力在HBM中两三次物化(B, N, S, S)分数矩阵（分数、加掩码后的分数、概率），并为每个
    查询组重复K/V。融合内核沿序列分块、softmax在片上完成，直接读取共享的K/V头：显存从O(S²)
    降到O(S)。
示例
    k_full, v_full = expand_kv_heads(key, n_rep), expand_kv_heads(value, n_rep)
    logits = torch.matmul(query, k_full.transpose(2, 3)) * scaling + causal_mask
    probs = F.softmax(logits, dim=-1, dtype=torch.float32).to(query.dtype)
    out = torch.matmul(probs, v_full).transpose(1, 2)
替代写法
    out = torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=N, num_key_value_heads=KVN, input_layout="BNSD",
        scale=scaling, atten_mask=self.causal_mask_2048 if q_len > 1 else None, sparse_mode=3)[0].transpose(1, 2)
修复安全性
    需要前置改造：压缩因果掩码是一次性创建的(2048, 2048) bool缓冲区（triu(ones, 1)，True表示
    屏蔽）；用完整S x S掩码配合sparse_mode=0是文档记载的静默错误陷阱（pitfalls 1.3、1.5）。须
    显式传入scale：默认值是1.0而不是head_dim^-0.5。检查项：TP切分后每卡头数满足N % KVN == 0且
    N/KVN <= 64，各布局的head_dim（此处BNSD；TND仅64/128/192），类型为float16/bfloat16。左填充
    批次的padding掩码不只是因果掩码：需要actual_seq_lengths，否则保留eager实现。
    经同一段代码执行的解码步（query只有一个token）不传掩码：FIA的增量路径忽略sparse_mode，
    会把2048掩码当作(B, KV_S)掩码读取，因此替换代码仅在query多于一个token时传入atten_mask；
    当缓存恰好只含有效的键时，该步与eager代码一样看到全部键。
参考
    catalog/attention/npu_fused_infer_attention_score.toml；pitfalls.md 1.1、1.3、1.5、1.6；
    reference_chains.md module-attention-gqa。
""",
}


def search(query, key, value, attention_mask, scaling, n_rep):
    # HF eager attention. The matcher reads repeat_kv's `x[:, :, None].expand(...).reshape(...)`
    # as this repeat_interleave, `/ sqrt(head_dim)` as `* scaling`, and transpose(-2, -1)
    # as transpose(2, 3); the mask add is optional (no mask in a plain causal model).
    key_states = torch.repeat_interleave(key, n_rep, dim=1)
    value_states = torch.repeat_interleave(value, n_rep, dim=1)
    logits = torch.matmul(query, key_states.transpose(2, 3)) * scaling + attention_mask
    probs = F.softmax(logits, dim=-1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(probs, value_states).transpose(1, 2)


def search_scaled_query(query, key, value, attention_mask, scaling, n_rep):
    # The scale folded into the query before the score matmul (Gemma, GPT-NeoX
    # style): (q * s) @ k^T equals (q @ k^T) * s.
    key_states = torch.repeat_interleave(key, n_rep, dim=1)
    value_states = torch.repeat_interleave(value, n_rep, dim=1)
    logits = torch.matmul(query * scaling, key_states.transpose(2, 3)) + attention_mask
    probs = F.softmax(logits.float(), dim=-1).type_as(query)
    return torch.matmul(probs, value_states).transpose(1, 2)


def search_mask_then_scale(query, key, value, attention_mask, scaling, n_rep):
    # CodeGen: the mask added before the scale, (QK^T + mask) * scale. HF masks hold 0 or
    # the dtype's minimum, so scaling the masked scores keeps them masked: the same
    # probabilities as QK^T * scale + mask.
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


def search_sdpa_is_causal(query, key, value, attention_mask, scaling, n_rep):
    # attention_mask unused: the causal structure comes from is_causal (square prefill).
    k = torch.repeat_interleave(key, dim=1, repeats=n_rep)
    v = torch.repeat_interleave(value, dim=1, repeats=n_rep)
    out = F.scaled_dot_product_attention(query, k, v, is_causal=True, scale=scaling)
    return out.transpose(1, 2)


def lookalike_no_softmax(query, key, value, attention_mask, scaling, n_rep):
    # Linear attention: a positive feature map (elu + 1) on q and k instead of a
    # softmax over the keys, keys and values contracted first. The normaliser
    # that usually follows reads this product and is left out, so any form of it
    # (and its epsilon) is covered.
    key_states = torch.repeat_interleave(key, n_rep, dim=1)
    value_states = torch.repeat_interleave(value, n_rep, dim=1)
    q = F.elu(query) + 1
    k = F.elu(key_states) + 1
    kv = torch.matmul(k.transpose(-2, -1), value_states)
    return torch.matmul(q, kv)


def lookalike_softcap(query, key, value, attention_mask, scaling, n_rep, softcap=50.0):
    # Logit soft-capping (Gemma 2, Grok): tanh(scores / cap) * cap before the
    # mask and the softmax. The numeric test uses a cap of 1.0, which the test
    # scores reach; at 50 the curve is nearly linear over them.
    key_states = torch.repeat_interleave(key, n_rep, dim=1)
    value_states = torch.repeat_interleave(value, n_rep, dim=1)
    logits = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    logits = torch.tanh(logits / softcap) * softcap + attention_mask
    probs = F.softmax(logits, dim=-1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(probs, value_states)


def replace(query, key, value, attention_mask, scaling, n_rep):
    causal_mask_2048 = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    out = torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=query.shape[1], num_key_value_heads=key.shape[1],
        input_layout="BNSD", scale=scaling, atten_mask=causal_mask_2048 if query.shape[2] > 1 else None,
        sparse_mode=3)[0]
    return out.transpose(1, 2)


def naive_default_scale(query, key, value, attention_mask, scaling, n_rep):
    # scale omitted: FIA's default is 1.0, so the logits are head_dim ** 0.5 times too large.
    causal_mask_2048 = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    out = torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=query.shape[1], num_key_value_heads=key.shape[1],
        input_layout="BNSD", atten_mask=causal_mask_2048, sparse_mode=3)[0]
    return out.transpose(1, 2)


def naive_no_mask(query, key, value, attention_mask, scaling, n_rep):
    # sparse_mode 0 without a mask attends to future tokens.
    out = torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=query.shape[1], num_key_value_heads=key.shape[1],
        input_layout="BNSD", scale=scaling)[0]
    return out.transpose(1, 2)
