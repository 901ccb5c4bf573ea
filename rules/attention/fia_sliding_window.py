"""Sliding-window causal attention in prefill becomes FIA with sparse_mode=4 and pre_tokens.

What it does
    Finds prefill attention whose mask is causal and also hides keys `window` or more
    positions back (Mistral, Qwen2 with use_sliding_window, Gemma-2/3 and GPT-OSS local
    layers): `(j > i) | (i - j >= window)`. It proposes
    `npu_fused_infer_attention_score(..., atten_mask=mask_2048, sparse_mode=4,
    pre_tokens=window - 1, next_tokens=0)`.
Why
    Same gains as causal prefill (no S x S matrices in HBM), plus the kernel skips the
    blocks outside the band entirely.
Example
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    attn_weights = attn_weights + sliding_window_mask
    attn_weights = softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
Use instead
    out = torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=N, num_key_value_heads=KVN, input_layout="BNSD",
        scale=scaling, atten_mask=self.causal_mask_2048, sparse_mode=4,
        pre_tokens=window - 1, next_tokens=0)[0]
Fix safety
    Needs prerequisites (the 2048 x 2048 mask buffer). Off by one: HF keeps the current
    token and `window - 1` earlier ones, which is pre_tokens = window - 1 in the band
    semantics the numeric check verifies; copying `pre_tokens=window` from other ports
    admits one extra key. Prefill only: with query length 1 the kernel ignores
    sparse_mode and pre_tokens (decode needs a windowed KV range instead).
References
    catalog/attention/npu_fused_infer_attention_score.toml (sparse_mode_values,
    decode_window_not_applied); pitfalls.md 1.5; reference_chains.md module-attention-gqa.
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "attention.fia_sliding_window",
    "title": "sliding-window causal attention (prefill) -> FIA sparse_mode=4, pre_tokens=window-1",
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
        "npu_fused_infer_attention_score:sparse_mode_values",
        "npu_fused_infer_attention_score:causal_use_compressed_mask",
        "npu_fused_infer_attention_score:prefill_head_dim_le_512",
        "npu_fused_infer_attention_score:anchored_modes_need_valid_keys",
        "npu_fused_infer_attention_score:compressed_mask_drops_padding",
        "npu_fused_infer_attention_score:decode_window_not_applied",
        "npu_fused_infer_attention_score:no_alibi_bias"
    ],
    "when": "sliding_window > 0",
    # the pattern is a plain softmax over the scores: a sink logit joined to
    # them (GPT-OSS) would not match, so the matched chain has none
    "facts": {"stage": "prefill", "layout": "BNSD", "sparse_mode": 4, "causal": True, "attention_sinks": False},
    "inputs": {
        "query": {"shape": ["B", "N", "S", "D"], "dtype": "act"},
        "key": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "value": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "sliding_mask": {"shape": ["B", 1, "S", "S"], "dtype": "act", "init": "sliding_additive", "window": "W"},
        "scaling": {"dtype": "param", "expr": "D ** -0.5"},
        "n_rep": {"dtype": "param", "expr": "N // KVN"},
        "window": {"dtype": "param", "expr": "W"},
    },
    "sizes": {"B": 2, "N": 4, "KVN": 2, "S": 12, "D": 64, "W": 4},
    "dtypes": ["float32", "bfloat16"],
    "match": {"optional": ["repeat_interleave"],
              "lookalikes": {"lookalike_chunked_local": "fixtures/fia_sliding_window_nomatch_chunked_local.py"}},
    "near_misses": [
        {"file": "fixtures/fia_sliding_window_nomatch_chunked_local.py",
         "reason": "block-local (chunked) attention: keys are limited to the query's chunk, not to a band of fixed width"},
    ],
    "doc_zh": """预填充阶段的滑动窗口因果注意力替换为sparse_mode=4加pre_tokens的FIA。

功能
    识别掩码既是因果的、又屏蔽window个位置及更早的键的预填充注意力（Mistral、启用
    use_sliding_window的Qwen2、Gemma-2/3与GPT-OSS的局部层）：(j > i) | (i - j >= window)。建议
    改为npu_fused_infer_attention_score(..., atten_mask=mask_2048, sparse_mode=4,
    pre_tokens=window - 1, next_tokens=0)。
原因
    与因果预填充同样的收益（HBM中没有S x S矩阵），且内核完全跳过带外的块。
示例
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    attn_weights = attn_weights + sliding_window_mask
    attn_weights = softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
替代写法
    out = torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=N, num_key_value_heads=KVN, input_layout="BNSD",
        scale=scaling, atten_mask=self.causal_mask_2048, sparse_mode=4,
        pre_tokens=window - 1, next_tokens=0)[0]
修复安全性
    需要前置改造（2048 x 2048掩码缓冲区）。差一问题：HF保留当前token及之前window - 1个token，
    在带状语义中即pre_tokens = window - 1，数值检查验证了这一点；照搬其他移植中的
    pre_tokens=window会多看到一个键。仅限预填充：查询长度为1时内核忽略sparse_mode与pre_tokens
    （解码需改为限制KV窗口范围）。
参考
    catalog/attention/npu_fused_infer_attention_score.toml（sparse_mode_values、
    decode_window_not_applied）；pitfalls.md 1.5；reference_chains.md module-attention-gqa。
""",
}


def search(query, key, value, sliding_mask, scaling, n_rep, window):
    key_states = torch.repeat_interleave(key, dim=1, repeats=n_rep)
    value_states = torch.repeat_interleave(value, dim=1, repeats=n_rep)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    attn_weights = attn_weights + sliding_mask
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(attn_weights, value_states)


def search_band_mask(query, key, value, sliding_mask, scaling, n_rep, window):
    # The band built in place from positions: causal and fewer than `window` keys back.
    key_states = torch.repeat_interleave(key, dim=1, repeats=n_rep)
    value_states = torch.repeat_interleave(value, dim=1, repeats=n_rep)
    pos = torch.arange(query.shape[-2])
    keep = (pos[None, :] <= pos[:, None]) & (pos[:, None] - pos[None, :] < window)
    scores = torch.matmul(query, key_states.transpose(-1, -2)) * scaling
    probs = torch.softmax(scores.masked_fill(~keep, float("-inf")).float(), dim=-1).to(query.dtype)
    return torch.matmul(probs, value_states)


def lookalike_chunked_local(query, key, value, sliding_mask, scaling, n_rep, window):
    # Block-local attention (Llama 4 style chunks of `window` tokens): a query sees
    # the earlier keys of its own chunk only, so the first query of a chunk sees
    # itself alone, where a sliding band would reach back window - 1 keys.
    key_states = torch.repeat_interleave(key, dim=1, repeats=n_rep)
    value_states = torch.repeat_interleave(value, dim=1, repeats=n_rep)
    pos = torch.arange(query.shape[-2])
    same_chunk = (pos[:, None] // window) == (pos[None, :] // window)
    keep = same_chunk & (pos[None, :] <= pos[:, None])
    scores = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    probs = torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)
    return torch.matmul(probs, value_states)


def replace(query, key, value, sliding_mask, scaling, n_rep, window):
    causal_mask_2048 = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    return torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=query.shape[1], num_key_value_heads=key.shape[1],
        input_layout="BNSD", scale=scaling, atten_mask=causal_mask_2048, sparse_mode=4,
        pre_tokens=window - 1, next_tokens=0)[0]


def naive_pre_tokens_window(query, key, value, sliding_mask, scaling, n_rep, window):
    # pre_tokens = window lets every query see one key more than the model does.
    causal_mask_2048 = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    return torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=query.shape[1], num_key_value_heads=key.shape[1],
        input_layout="BNSD", scale=scaling, atten_mask=causal_mask_2048, sparse_mode=4,
        pre_tokens=window, next_tokens=0)[0]


def naive_plain_causal(query, key, value, sliding_mask, scaling, n_rep, window):
    causal_mask_2048 = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    return torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=query.shape[1], num_key_value_heads=key.shape[1],
        input_layout="BNSD", scale=scaling, atten_mask=causal_mask_2048, sparse_mode=3)[0]
