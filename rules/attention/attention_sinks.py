"""Attention with learnable per-head sinks (GPT-OSS) becomes `npu_fused_infer_attention_score_v2` with `learnable_sink`, TND layout.

What it does
    Finds attention whose softmax includes one extra learned logit per head that takes
    probability mass but contributes no value: `cat([scores, sinks], -1)`, max-shift,
    softmax, then drop the last column before multiplying by V. It proposes FIA v2 in
    TND layout with `learnable_sink=sinks`, `sparse_mode=3` and the 2048 x 2048 mask,
    cumulative `actual_seq_qlen`/`actual_seq_kvlen`.
Why
    Besides the usual eager attention costs, the sink column forces a concat of the
    whole score matrix and an extra slice. Only the v2 operator has a sink input; v1
    cannot express it.
Example
    sink_col = self.sinks.reshape(1, -1, 1, 1).expand(b, -1, q_len, -1)
    with_sink = torch.cat([logits, sink_col], dim=-1)
    with_sink = with_sink - with_sink.max(dim=-1, keepdim=True).values
    probs = F.softmax(with_sink, dim=-1, dtype=with_sink.dtype)
    out = torch.matmul(probs[..., :-1], v_full)
Use instead
    out = torch_npu.npu_fused_infer_attention_score_v2(
        q_tnd, k_tnd, v_tnd, num_query_heads=N, num_key_value_heads=KVN,
        input_layout="TND", softmax_scale=scaling, atten_mask=mask_2048, sparse_mode=3,
        actual_seq_qlen=cu_seqlens, actual_seq_kvlen=cu_seqlens, learnable_sink=sinks)[0]
Fix safety
    Needs prerequisites: tokens packed as TND with cumulative sequence lengths (the last
    equal to T, pitfalls 1.2) and the 2048 mask buffer. Checked: TND only; value head_dim
    <= 128; no quantisation with sinks; TND head dims: with GQA the documented sizes are
    128 (or 192 with value 128/192). GPT-OSS has head_dim 64, which the documents list
    only for MHA: the check answers "unverified", the plan says so, and the reference
    implementation refuses it (the numeric check therefore runs at head_dim 128). v2 renames: `softmax_scale` (default 1.0 — pass
    it), `num_query_heads`, `actual_seq_qlen`, `actual_seq_kvlen`. The eager chain
    shifts the logits by their maximum in bfloat16, one more rounding than the kernel:
    the bfloat16 numeric check allows atol 0.03 instead of 0.01.
References
    catalog/attention/npu_fused_infer_attention_score_v2.toml (sink_layout_tnd,
    sink_value_dim_le_128, sink_no_quant); catalog v1 no_learnable_sink; pitfalls.md 1.1, 1.2.
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "attention.attention_sinks",
    "title": "attention with learnable sinks (GPT-OSS) -> FIA v2 learnable_sink, TND, sparse_mode=3",
    "module": "attention",
    "apis": ["npu_fused_infer_attention_score_v2"],
    "stages": ["prefill"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "pack_tnd",
         "en": "Pack q/k/v as TND (tokens, heads, head_dim) with cumulative actual_seq_qlen/actual_seq_kvlen whose last value equals T.",
         "zh": "把q/k/v打包为TND（token、头、head_dim），actual_seq_qlen/actual_seq_kvlen为累加值且最后一个等于T。",
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
        "npu_fused_infer_attention_score_v2:sink_layout_tnd",
        "npu_fused_infer_attention_score_v2:sink_value_dim_le_128",
        "npu_fused_infer_attention_score_v2:sink_no_quant",
        "npu_fused_infer_attention_score_v2:tnd_batch_le_4096",
        "npu_fused_infer_attention_score_v2:tnd_head_dims_gqa",
        "npu_fused_infer_attention_score_v2:tnd_head_dim_64_unverified",
        "npu_fused_infer_attention_score_v2:causal_use_compressed_mask",
        "npu_fused_infer_attention_score_v2:causal_modes_drop_window",
        "npu_fused_infer_attention_score_v2:causal_modes_need_causal_only_mask",
        "npu_fused_infer_attention_score_v2:no_alibi_bias"
    ],
    "facts": {"stage": "prefill", "layout": "TND", "sparse_mode": 3, "causal": True, "attention_sinks": True},
    "rejects": [
        {"api": "npu_fused_infer_attention_score",
         "en": "FIA v1 has no sink input: dropping the sinks renormalises the probabilities to 1 and changes every output.",
         "zh": "FIA v1没有sink输入：丢掉sink会使概率重新归一化为1，改变每个输出。",
         "needs": "npu_fused_infer_attention_score_v2 with learnable_sink and the TND layout"},
    ],
    "hints": {"class_names": ["GptOssAttention"]},
    "inputs": {
        "query": {"shape": ["B", "N", "S", "D"], "dtype": "act"},
        "key": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "value": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "attention_mask": {"shape": ["B", 1, "S", "S"], "dtype": "act", "init": "causal_additive"},
        "sinks": {"shape": ["N"], "dtype": "act"},
        "scaling": {"dtype": "param", "expr": "D ** -0.5"},
        "n_rep": {"dtype": "param", "expr": "N // KVN"},
    },
    "sizes": {"B": 2, "N": 8, "KVN": 2, "S": 7, "D": 128},
    "dtypes": ["float32", "bfloat16"],
    "tolerance": {"bfloat16": {"atol": 0.03}},
    "match": {"optional": ["repeat_interleave"],
              "lookalikes": {"lookalike_sink_kept": {
                  "near_miss": "fixtures/attention_sinks_nomatch_sink_kept.py",
                  "inputs": {"null_key": {"shape": ["N", 1, "D"], "dtype": "float32"},
                             "null_value": {"shape": ["N", 1, "D"], "dtype": "float32"}}}}},
    "near_misses": [
        {"file": "fixtures/attention_sinks_nomatch_sink_kept.py",
         "reason": "the sink column is kept and multiplied with a value row (a learned null token), not dropped"},
    ],
    "doc_zh": """带可学习逐头sink的注意力（GPT-OSS）替换为TND布局、带learnable_sink的npu_fused_infer_attention_score_v2。

功能
    识别softmax中每个头多一个可学习logit的注意力：它分走概率但不贡献value：
    cat([scores, sinks], -1)，减最大值，softmax，然后丢掉最后一列再乘V。建议改为TND布局的
    FIA v2，learnable_sink=sinks，sparse_mode=3加2048 x 2048掩码，actual_seq_qlen/actual_seq_kvlen
    为累加长度。
原因
    除常规eager注意力开销外，sink列还迫使对整个分数矩阵做一次拼接和一次切片。只有v2算子有sink
    输入，v1无法表达。
示例
    sink_col = self.sinks.reshape(1, -1, 1, 1).expand(b, -1, q_len, -1)
    with_sink = torch.cat([logits, sink_col], dim=-1)
    with_sink = with_sink - with_sink.max(dim=-1, keepdim=True).values
    probs = F.softmax(with_sink, dim=-1, dtype=with_sink.dtype)
    out = torch.matmul(probs[..., :-1], v_full)
替代写法
    out = torch_npu.npu_fused_infer_attention_score_v2(
        q_tnd, k_tnd, v_tnd, num_query_heads=N, num_key_value_heads=KVN,
        input_layout="TND", softmax_scale=scaling, atten_mask=mask_2048, sparse_mode=3,
        actual_seq_qlen=cu_seqlens, actual_seq_kvlen=cu_seqlens, learnable_sink=sinks)[0]
修复安全性
    需要前置改造：token按TND打包并提供累加序列长度（最后一个等于T，pitfalls 1.2），以及2048掩码
    缓冲区。检查项：仅TND；value的head_dim <= 128；有sink时不能量化；TND的head_dim：GQA下文档
    列出的是128（或192配value 128/192）。GPT-OSS的head_dim为64，文档只对MHA列出：检查结果为
    “未验证”，计划中会说明，参考实现会拒绝（因此数值检查在head_dim 128下运行）。v2参数改名：softmax_scale（默认1.0，须传入）、
    num_query_heads、actual_seq_qlen、actual_seq_kvlen。eager链在bfloat16中减去最大logit，比内核多
    一次舍入：bfloat16数值检查的atol放宽为0.03（默认0.01）。
参考
    catalog/attention/npu_fused_infer_attention_score_v2.toml（sink_layout_tnd、
    sink_value_dim_le_128、sink_no_quant）；v1目录no_learnable_sink；pitfalls.md 1.1、1.2。
""",
}


def search(query, key, value, attention_mask, sinks, scaling, n_rep):
    key_states = torch.repeat_interleave(key, dim=1, repeats=n_rep)
    value_states = torch.repeat_interleave(value, dim=1, repeats=n_rep)
    logits = torch.matmul(query, key_states.transpose(2, 3)) * scaling + attention_mask
    sink_col = sinks.reshape(1, -1, 1, 1).expand(query.shape[0], -1, query.shape[-2], -1)
    with_sink = torch.cat([logits, sink_col], dim=-1)
    with_sink = with_sink - with_sink.max(dim=-1, keepdim=True).values
    probs = F.softmax(with_sink.float(), dim=-1).to(query.dtype)
    return torch.matmul(probs[..., :-1], value_states)


def search_amax(query, key, value, attention_mask, sinks, scaling, n_rep):
    # The row maximum taken with amax, the sink column expanded to width 1 and the
    # sink probability dropped right after the softmax.
    key_states = torch.repeat_interleave(key, dim=1, repeats=n_rep)
    value_states = torch.repeat_interleave(value, dim=1, repeats=n_rep)
    logits = torch.matmul(query, key_states.transpose(2, 3)) * scaling + attention_mask
    sink_col = sinks.reshape(1, -1, 1, 1).expand(query.shape[0], -1, query.shape[-2], 1)
    with_sink = torch.cat([logits, sink_col], dim=-1)
    with_sink = with_sink - with_sink.amax(dim=-1, keepdim=True)
    probs = torch.softmax(with_sink.float(), dim=-1).to(query.dtype)[..., :-1]
    return torch.matmul(probs, value_states)


def search_logsumexp(query, key, value, attention_mask, sinks, scaling, n_rep):
    k = torch.repeat_interleave(key, dim=1, repeats=n_rep)
    v = torch.repeat_interleave(value, dim=1, repeats=n_rep)
    logits = (query @ k.transpose(-1, -2)) * scaling + attention_mask
    sink_col = sinks.view(1, -1, 1, 1).expand(*logits.shape[:-1], 1)
    full = torch.cat([logits, sink_col], dim=-1).float()
    probs = torch.exp(full - torch.logsumexp(full, dim=-1, keepdim=True))
    return probs[..., :-1].to(query.dtype) @ v


def lookalike_sink_kept(query, key, value, attention_mask, sinks, scaling, n_rep, null_key=None, null_value=None):
    # A learned null token: a (heads, 1, D) key and value pair broadcast over the
    # batch and joined to the keys and values. Its probability column is kept and
    # multiplies the null value row; nothing is dropped after the softmax.
    key_states = torch.repeat_interleave(key, dim=1, repeats=n_rep)
    value_states = torch.repeat_interleave(value, dim=1, repeats=n_rep)
    keys = torch.cat([key_states, null_key.unsqueeze(0).expand(key_states.shape[0], -1, 1, -1)], dim=-2)
    values = torch.cat([value_states, null_value.unsqueeze(0).expand(value_states.shape[0], -1, 1, -1)], dim=-2)
    probs = torch.softmax((query @ keys.transpose(-1, -2)) * scaling, dim=-1)
    return probs @ values


def replace(query, key, value, attention_mask, sinks, scaling, n_rep):
    b, n, s, d = query.shape
    kvh = key.shape[1]
    q_tnd = query.transpose(1, 2).reshape(b * s, n, d)
    k_tnd = key.transpose(1, 2).reshape(b * s, kvh, d)
    v_tnd = value.transpose(1, 2).reshape(b * s, kvh, d)
    cu_seqlens = [s * (i + 1) for i in range(b)]
    causal_mask_2048 = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    out = torch_npu.npu_fused_infer_attention_score_v2(
        q_tnd, k_tnd, v_tnd, num_query_heads=n, num_key_value_heads=kvh, input_layout="TND",
        softmax_scale=scaling, atten_mask=causal_mask_2048, sparse_mode=3,
        actual_seq_qlen=cu_seqlens, actual_seq_kvlen=cu_seqlens, learnable_sink=sinks)[0]
    return out.reshape(b, s, n, d).transpose(1, 2)


def naive_v1_without_sinks(query, key, value, attention_mask, sinks, scaling, n_rep):
    causal_mask_2048 = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    return torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=query.shape[1], num_key_value_heads=key.shape[1],
        input_layout="BNSD", scale=scaling, atten_mask=causal_mask_2048, sparse_mode=3)[0]
