"""Packed variable-length causal prefill becomes `npu_fused_infer_attention_score_v2` in TND with cumulative lengths.

What it does
    Finds prefill over packed tokens (T, N, D) of several sequences, each attending
    causally only to itself: a per-sequence loop of softmax attention (the torch
    fallback of varlen flash-attention), or the varlen dispatch itself. It proposes one
    FIA v2 call with `input_layout='TND'`, `actual_seq_qlen`/`actual_seq_kvlen` as
    CUMULATIVE lengths, `softmax_scale`, `sparse_mode=3` and the 2048 x 2048 mask.
Why
    One launch for the whole batch without padding, instead of one attention (and its
    score matrices) per sequence. TND is the layout serving engines and the expert ports
    use for prefill with paged caches.
Example
    for n in seq_lens:
        qs = q[start:start + n].transpose(0, 1)
        scores = qs @ ks.transpose(-1, -2) * scaling
        ... causal softmax, @ vs ...
        start += n
Use instead
    out = torch_npu.npu_fused_infer_attention_score_v2(
        q, k, v, num_query_heads=N, num_key_value_heads=KVN, input_layout="TND",
        softmax_scale=scaling, atten_mask=mask_2048, sparse_mode=3,
        actual_seq_qlen=cu_seqlens, actual_seq_kvlen=cu_seqlens)[0]
Fix safety
    Needs prerequisites: cumulative lengths whose last value equals T (per-sequence
    lengths are refused: "queryT must be equal to the last element of
    actualSequenceLengthQ", pitfalls 1.2) and the 2048 mask buffer. v2 renames the v1
    parameters (scale -> softmax_scale, num_heads -> num_query_heads, actual_seq_lengths
    -> actual_seq_qlen, actual_seq_lengths_kv -> actual_seq_kvlen) and softmax_scale
    defaults to 1.0: pass head_dim^-0.5 (the numeric check shows the default is wrong).
    TND head dims: 128 (or 192 with V 128/192), 64 only documented for MHA; otherwise use
    BSND/BNSD (pitfalls 1.1). Non-causal encoders must not use TND with sparse_mode 0
    and no mask (pitfalls 1.4).
References
    catalog/attention/npu_fused_infer_attention_score_v2.toml; pitfalls.md 1.1, 1.2, 1.4;
    reference_chains.md model-infer-kvcache (v1/v2 parameter names).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "attention.fia_prefill_varlen_v2",
    "title": "packed varlen causal prefill -> FIA v2 TND, cumulative actual_seq_qlen/kvlen, softmax_scale",
    "module": "attention",
    "apis": ["npu_fused_infer_attention_score_v2"],
    "stages": ["prefill"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "cumulative_seq_lens",
         "en": "Pass cumulative sequence lengths (cu_seqlens[1:], last value = T) as actual_seq_qlen and actual_seq_kvlen.",
         "zh": "以累加序列长度（cu_seqlens[1:]，最后一个值等于T）作为actual_seq_qlen和actual_seq_kvlen传入。",
         "mechanical": True},
        {"id": "causal_mask_2048",
         "en": "Create the compressed causal mask once: torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1) as a buffer.",
         "zh": "一次性创建压缩因果掩码缓冲区：torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)。",
         "mechanical": True},
    ],
    "checks": [
        "npu_fused_infer_attention_score_v2:query_dtype",
        "npu_fused_infer_attention_score_v2:gqa_heads_divisible",
        "npu_fused_infer_attention_score_v2:gqa_ratio_le_64",
        "npu_fused_infer_attention_score_v2:layout_supported",
        "npu_fused_infer_attention_score_v2:tnd_batch_le_4096",
        "npu_fused_infer_attention_score_v2:tnd_head_dims_gqa",
        "npu_fused_infer_attention_score_v2:tnd_head_dims_mha",
        "npu_fused_infer_attention_score_v2:tnd_head_dim_64_unverified",
        "npu_fused_infer_attention_score_v2:causal_use_compressed_mask",
        "npu_fused_infer_attention_score_v2:non_causal_avoid_tnd",
        "npu_fused_infer_attention_score_v2:causal_modes_drop_window",
        "npu_fused_infer_attention_score_v2:causal_modes_need_causal_only_mask",
        "npu_fused_infer_attention_score_v2:no_alibi_bias"
    ],
    # the pattern is a plain softmax over the scores: a sink logit joined to
    # them (GPT-OSS) would not match, so the matched chain has none
    "facts": {"stage": "prefill", "layout": "TND", "sparse_mode": 3, "causal": True, "attention_sinks": False},
    "inputs": {
        "query": {"shape": ["T", "N", "D"], "dtype": "act"},
        "key": {"shape": ["T", "KVN", "D"], "dtype": "act"},
        "value": {"shape": ["T", "KVN", "D"], "dtype": "act"},
        "seq_lens": {"dtype": "param", "expr": "[T // 4, T - T // 4 - T // 3, T // 3]"},
        "scaling": {"dtype": "param", "expr": "D ** -0.5"},
        "n_rep": {"dtype": "param", "expr": "N // KVN"},
    },
    "sizes": {"T": 12, "N": 8, "KVN": 2, "D": 128},
    "dtypes": ["float32", "bfloat16"],
    "min_torch": {"search_sdpa_per_sequence": "2.1"},
    "match": {"optional": ["repeat_interleave"],
              "lookalikes": {"lookalike_cross_sequence": "fixtures/fia_prefill_varlen_v2_nomatch_cross_sequence.py"}},
    "near_misses": [
        {"file": "fixtures/fia_prefill_varlen_v2_nomatch_cross_sequence.py",
         "reason": "one causal mask over all packed tokens: sequences attend to each other, which cumulative TND lengths would forbid"},
    ],
    "doc_zh": """打包的变长因果预填充替换为TND布局、累加长度的npu_fused_infer_attention_score_v2。

功能
    识别对多条序列打包后的token (T, N, D)做预填充、每条序列只因果地关注自身的写法：逐序列循环的
    softmax注意力（变长flash-attention的torch回退实现），或变长分发本身。建议改为一次FIA v2调用：
    input_layout='TND'，actual_seq_qlen/actual_seq_kvlen为累加长度，softmax_scale，sparse_mode=3加
    2048 x 2048掩码。
原因
    整个batch一次启动且无需填充，而不是每条序列一次注意力（及其分数矩阵）。TND是推理服务引擎和专家
    移植在分页缓存预填充中使用的布局。
示例
    for n in seq_lens:
        qs = q[start:start + n].transpose(0, 1)
        scores = qs @ ks.transpose(-1, -2) * scaling
        ... 因果softmax，@ vs ...
        start += n
替代写法
    out = torch_npu.npu_fused_infer_attention_score_v2(
        q, k, v, num_query_heads=N, num_key_value_heads=KVN, input_layout="TND",
        softmax_scale=scaling, atten_mask=mask_2048, sparse_mode=3,
        actual_seq_qlen=cu_seqlens, actual_seq_kvlen=cu_seqlens)[0]
修复安全性
    需要前置改造：累加长度且最后一个值等于T（逐序列长度会被拒绝："queryT must be equal to the last
    element of actualSequenceLengthQ"，pitfalls 1.2），以及2048掩码缓冲区。v2对v1参数改名
    （scale -> softmax_scale，num_heads -> num_query_heads，actual_seq_lengths -> actual_seq_qlen，
    actual_seq_lengths_kv -> actual_seq_kvlen），且softmax_scale默认1.0：须传入head_dim^-0.5（数值
    检查表明默认值是错的）。TND的head_dim：128（或192配V 128/192），64只对MHA有文档；否则用
    BSND/BNSD（pitfalls 1.1）。非因果编码器不能用TND加sparse_mode 0且无掩码（pitfalls 1.4）。
参考
    catalog/attention/npu_fused_infer_attention_score_v2.toml；pitfalls.md 1.1、1.2、1.4；
    reference_chains.md model-infer-kvcache（v1/v2参数名）。
""",
}


def search(query, key, value, seq_lens, scaling, n_rep):
    outs = []
    start = 0
    for n in seq_lens:
        qs = query[start:start + n].transpose(0, 1)
        ks = key[start:start + n].transpose(0, 1).repeat_interleave(n_rep, dim=0)
        vs = value[start:start + n].transpose(0, 1).repeat_interleave(n_rep, dim=0)
        scores = torch.matmul(qs, ks.transpose(-1, -2)) * scaling
        causal = torch.ones(n, n, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(causal, float("-inf"))
        probs = F.softmax(scores.float(), dim=-1).to(query.dtype)
        outs.append(torch.matmul(probs, vs).transpose(0, 1))
        start += n
    return torch.cat(outs, dim=0)


def search_sdpa_per_sequence(query, key, value, seq_lens, scaling, n_rep):
    outs = []
    for qs, ks, vs in zip(query.split(seq_lens), key.split(seq_lens), value.split(seq_lens)):
        ks = ks.repeat_interleave(n_rep, dim=1)
        vs = vs.repeat_interleave(n_rep, dim=1)
        o = F.scaled_dot_product_attention(qs.transpose(0, 1), ks.transpose(0, 1), vs.transpose(0, 1),
                                           is_causal=True, scale=scaling)
        outs.append(o.transpose(0, 1))
    return torch.cat(outs, dim=0)


def search_split_eager(query, key, value, seq_lens, scaling, n_rep):
    # torch.split into sequences, then the eager causal softmax on each.
    outs = []
    for qs, ks, vs in zip(query.split(seq_lens), key.split(seq_lens), value.split(seq_lens)):
        qs = qs.transpose(0, 1)
        ks = ks.transpose(0, 1).repeat_interleave(n_rep, dim=0)
        vs = vs.transpose(0, 1).repeat_interleave(n_rep, dim=0)
        n = qs.shape[1]
        scores = torch.matmul(qs, ks.transpose(-1, -2)) * scaling
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        probs = F.softmax(scores.float(), dim=-1).to(query.dtype)
        outs.append(torch.matmul(probs, vs).transpose(0, 1))
    return torch.cat(outs, dim=0)


def lookalike_cross_sequence(query, key, value, seq_lens, scaling, n_rep):
    # The packed tokens attend as one sequence: a single (T, T) causal mask lets
    # every sequence see the sequences packed before it.
    t = query.shape[0]
    k = key.repeat_interleave(n_rep, dim=1)
    v = value.repeat_interleave(n_rep, dim=1)
    scores = torch.einsum("tnd,snd->nts", query, k) * scaling
    scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
    return torch.einsum("nts,snd->tnd", torch.softmax(scores, dim=-1), v)


def replace(query, key, value, seq_lens, scaling, n_rep):
    cu_seqlens = torch.tensor(seq_lens).cumsum(0).tolist()
    causal_mask_2048 = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    return torch_npu.npu_fused_infer_attention_score_v2(
        query, key, value, num_query_heads=query.shape[1], num_key_value_heads=key.shape[1],
        input_layout="TND", softmax_scale=scaling, atten_mask=causal_mask_2048, sparse_mode=3,
        actual_seq_qlen=cu_seqlens, actual_seq_kvlen=cu_seqlens)[0]


def naive_default_softmax_scale(query, key, value, seq_lens, scaling, n_rep):
    cu_seqlens = torch.tensor(seq_lens).cumsum(0).tolist()
    causal_mask_2048 = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    return torch_npu.npu_fused_infer_attention_score_v2(
        query, key, value, num_query_heads=query.shape[1], num_key_value_heads=key.shape[1],
        input_layout="TND", atten_mask=causal_mask_2048, sparse_mode=3,
        actual_seq_qlen=cu_seqlens, actual_seq_kvlen=cu_seqlens)[0]


def naive_per_sequence_lengths(query, key, value, seq_lens, scaling, n_rep):
    causal_mask_2048 = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    return torch_npu.npu_fused_infer_attention_score_v2(
        query, key, value, num_query_heads=query.shape[1], num_key_value_heads=key.shape[1],
        input_layout="TND", softmax_scale=scaling, atten_mask=causal_mask_2048, sparse_mode=3,
        actual_seq_qlen=list(seq_lens), actual_seq_kvlen=list(seq_lens))[0]
