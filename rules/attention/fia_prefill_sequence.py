"""Causal attention over one packed sequence ([S, N, D], einsum or matmul) becomes `npu_fused_infer_attention_score` in TND layout.

What it does
    Finds the vLLM-style prefill core of one sequence whose tokens are packed along
    the first axis: q [S, N, D], k/v [S, KVN, D] (GQA heads repeated with
    `repeat_interleave(.., dim=1)`), scores by `einsum("qhd,khd->hqk")` (or matmuls
    over the head-major transposes) times the scale, the future blanked by
    `masked_fill(triu(ones(S, S), 1), -inf)`, a softmax, and the product with V back
    to [S, N, D]. It proposes one `torch_npu.npu_fused_infer_attention_score(q, k, v,
    num_heads=N, num_key_value_heads=KVN, input_layout='TND', scale=scale,
    atten_mask=mask_2048, sparse_mode=3, actual_seq_lengths=[S],
    actual_seq_lengths_kv=[S])[0]` on the un-repeated K/V.
Why
    The eager core writes the (N, S, S) scores, the masked copy and the probabilities
    to memory and repeats K/V per query group. The fused kernel keeps the tile on chip
    and reads the shared heads; in TND it takes the packed tokens as they are.
Example
    k = k.repeat_interleave(group, dim=1)
    scores = torch.einsum("qhd,khd->hqk", q, k) * scale
    scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
    out = torch.einsum("hqk,khd->qhd", scores.softmax(dim=-1), v)
Use instead
    out = torch_npu.npu_fused_infer_attention_score(
        q, k, v, num_heads=N, num_key_value_heads=KVN, input_layout="TND", scale=scale,
        atten_mask=self.causal_mask_2048, sparse_mode=3,
        actual_seq_lengths=[s], actual_seq_lengths_kv=[s])[0]
Fix safety
    Needs prerequisites: the compressed causal mask (a (2048, 2048) bool buffer,
    `triu(ones, 1)`, True = masked) created once. TND needs head_dim 128 (or 192 for
    q/k); other widths keep BSND by adding a batch axis. A caller that runs this core
    sequence by sequence in a Python loop gains most by batching the loop into one
    call with cumulative lengths (attention.fia_prefill_varlen_v2). Pass the scale
    explicitly (default 1.0).
References
    catalog/attention/npu_fused_infer_attention_score.toml; pitfalls.md 1.1, 1.3, 1.5;
    reference_chains.md module-attention-gqa.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "attention.fia_prefill_sequence",
    "title": "causal attention over one packed sequence [S, N, D] (einsum/matmul, vLLM style) -> FIA TND sparse_mode=3",
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
        "npu_fused_infer_attention_score:prefill_heads_le_256",
        "npu_fused_infer_attention_score:prefill_head_dim_le_512",
        "npu_fused_infer_attention_score:prefill_head_dim_multiple_16",
        "npu_fused_infer_attention_score:causal_use_compressed_mask",
        "npu_fused_infer_attention_score:causal_modes_drop_window",
        "npu_fused_infer_attention_score:tnd_head_dims",
        "npu_fused_infer_attention_score:no_learnable_sink",
        "npu_fused_infer_attention_score:causal_modes_need_causal_only_mask",
        "npu_fused_infer_attention_score:no_alibi_bias"
    ],
    # a plain softmax over the scores: no sink logit joins them
    "facts": {"stage": "prefill", "layout": "TND", "sparse_mode": 3, "causal": True, "attention_sinks": False},
    "inputs": {
        "query": {"shape": ["S", "N", "D"], "dtype": "act"},
        "key": {"shape": ["S", "KVN", "D"], "dtype": "act"},
        "value": {"shape": ["S", "KVN", "D"], "dtype": "act"},
        "scaling": {"dtype": "param", "expr": "D ** -0.5"},
        "n_rep": {"dtype": "param", "expr": "N // KVN"},
    },
    "sizes": {"S": 7, "N": 8, "KVN": 2, "D": 128},
    "dtypes": ["float32", "bfloat16"],
    "match": {"optional": ["repeat_interleave"],
              "explain": [{"when": "expected 1, found 0", "near_miss": "fixtures/fia_prefill_sequence_nomatch_diagonal_masked.py"}]},
    "near_misses": [
        {"file": "fixtures/fia_prefill_sequence_nomatch_diagonal_masked.py",
         "reason": "the mask also hides the diagonal (triu(0)): no token sees itself, which the causal sparse_mode=3 does not express"},
    ],
    "doc_zh": """单条打包序列（[S, N, D]，einsum或matmul）上的因果注意力替换为TND布局的npu_fused_infer_attention_score。

功能
    识别vLLM写法中单条序列的预填充核心：token沿第一维打包，q为[S, N, D]，k/v为[S, KVN, D]
    （GQA头用repeat_interleave(.., dim=1)重复），分数为einsum("qhd,khd->hqk")（或对头优先
    转置做matmul）乘以缩放，用masked_fill(triu(ones(S, S), 1), -inf)屏蔽未来，softmax后与V
    相乘回到[S, N, D]。建议在未重复的K/V上调用一次torch_npu.npu_fused_infer_attention_score(
    q, k, v, num_heads=N, num_key_value_heads=KVN, input_layout='TND', scale=scale,
    atten_mask=mask_2048, sparse_mode=3, actual_seq_lengths=[S], actual_seq_lengths_kv=[S])[0]。
原因
    eager核心把(N, S, S)分数、掩码后的副本和概率写入显存，并为每个查询组重复K/V。融合内核
    把分块留在片上并直接读取共享头；TND布局直接接受打包的token。
示例
    k = k.repeat_interleave(group, dim=1)
    scores = torch.einsum("qhd,khd->hqk", q, k) * scale
    scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
    out = torch.einsum("hqk,khd->qhd", scores.softmax(dim=-1), v)
替代写法
    out = torch_npu.npu_fused_infer_attention_score(
        q, k, v, num_heads=N, num_key_value_heads=KVN, input_layout="TND", scale=scale,
        atten_mask=self.causal_mask_2048, sparse_mode=3,
        actual_seq_lengths=[s], actual_seq_lengths_kv=[s])[0]
修复安全性
    需要前置改造：一次性创建压缩因果掩码（(2048, 2048) bool缓冲区，triu(ones, 1)，True表示
    屏蔽）。TND要求head_dim为128（q/k也可为192）；其他宽度加一个批维后使用BSND。在Python
    循环中逐条序列调用该核心的调用方，把循环合并为一次带累积长度的调用收益最大
    （attention.fia_prefill_varlen_v2）。须显式传入scale（默认1.0）。
参考
    catalog/attention/npu_fused_infer_attention_score.toml；pitfalls.md 1.1、1.3、1.5；
    reference_chains.md module-attention-gqa。
""",
}


def search(query, key, value, scaling, n_rep):
    k = key.repeat_interleave(n_rep, dim=1)
    v = value.repeat_interleave(n_rep, dim=1)
    scores = torch.einsum("qhd,khd->hqk", query, k) * scaling
    s = query.shape[0]
    scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
    return torch.einsum("hqk,khd->qhd", scores.softmax(dim=-1), v)


def search_matmul(query, key, value, scaling, n_rep):
    k = key.repeat_interleave(n_rep, dim=1)
    v = value.repeat_interleave(n_rep, dim=1)
    scores = torch.matmul(query.transpose(0, 1), k.transpose(0, 1).transpose(-1, -2)) * scaling
    s = query.shape[0]
    scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
    return torch.matmul(scores.softmax(dim=-1), v.transpose(0, 1)).transpose(0, 1)


def replace(query, key, value, scaling, n_rep):
    s = query.shape[0]
    causal_mask_2048 = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    return torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=query.shape[1], num_key_value_heads=key.shape[1],
        input_layout="TND", scale=scaling, atten_mask=causal_mask_2048, sparse_mode=3,
        actual_seq_lengths=[s], actual_seq_lengths_kv=[s])[0]


def naive_no_mask(query, key, value, scaling, n_rep):
    # sparse_mode 0 without a mask: every token sees the future.
    s = query.shape[0]
    return torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=query.shape[1], num_key_value_heads=key.shape[1],
        input_layout="TND", scale=scaling, actual_seq_lengths=[s], actual_seq_lengths_kv=[s])[0]
