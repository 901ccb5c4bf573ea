"""Attention with learnable sinks and a boolean mask (`masked_fill`) becomes `npu_fused_infer_attention_score_v2` with `learnable_sink`, TND layout.

What it does
    The same chain as attention.attention_sinks, with the mask applied by
    `scores.masked_fill(~keep, -inf)` on a boolean "may attend" tensor (built from
    positions, or a tril buffer) instead of an additive mask: a learned logit per head
    is concatenated as one more column, the row is shifted by its maximum, softmaxed,
    and the sink column is dropped before the product with V. It proposes FIA v2 in
    TND layout with `learnable_sink=sinks`, `sparse_mode=3` and the 2048 x 2048 mask.
Why
    FIA v1 has no sink input, so without v2 the sink would be lost; the eager chain
    also concatenates and slices the whole score matrix.
Example
    logits = logits.masked_fill(~visible, float("-inf"))
    sink = self.sinks.view(1, -1, 1, 1).expand(b, -1, s, 1)
    combined = torch.cat([logits, sink], dim=-1)
    combined = combined - combined.max(dim=-1, keepdim=True).values
    probs = F.softmax(combined.float(), dim=-1).to(q.dtype)[..., :-1]
    out = torch.matmul(probs, v_all)
Use instead
    out = torch_npu.npu_fused_infer_attention_score_v2(
        q_tnd, k_tnd, v_tnd, num_query_heads=N, num_key_value_heads=KVN,
        input_layout="TND", softmax_scale=scaling, atten_mask=mask_2048, sparse_mode=3,
        actual_seq_qlen=cu_seqlens, actual_seq_kvlen=cu_seqlens, learnable_sink=sinks)[0]
Fix safety
    Needs prerequisites: tokens packed as TND with cumulative sequence lengths and the
    2048 mask buffer. The keep mask must be the causal one: where the model narrows it
    to a sliding window (`visible & (pos_q - pos_k < window)`), the call needs
    `sparse_mode=4` with `pre_tokens=window - 1, next_tokens=0` instead (a prerequisite
    the plan lists). Checked as for attention.attention_sinks: TND only, value head_dim
    <= 128, no quantisation with sinks, the TND head dims (head_dim 64 with GQA is not
    listed by the documents: "unverified"). The numeric check runs at head_dim 128 with a
    causal keep mask; the bfloat16 check allows atol 0.03 (the eager max shift rounds
    once more than the kernel).
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
    "id": "attention.attention_sinks_masked_fill",
    "title": "attention with learnable sinks and a masked_fill mask (GPT-OSS) -> FIA v2 learnable_sink, TND",
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
        {"id": "sliding_window_band",
         "en": "Where the keep mask is narrowed to a sliding window, call with sparse_mode=4, pre_tokens=window - 1, next_tokens=0 on those layers.",
         "zh": "若keep掩码被收窄为滑动窗口，这些层改用sparse_mode=4、pre_tokens=window - 1、next_tokens=0调用。",
         "mechanical": False},
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
        "keep": {"shape": [1, 1, "S", "S"], "dtype": "bool", "init": "causal_keep"},
        "sinks": {"shape": ["N"], "dtype": "act"},
        "scaling": {"dtype": "param", "expr": "D ** -0.5"},
        "n_rep": {"dtype": "param", "expr": "N // KVN"},
    },
    "sizes": {"B": 2, "N": 8, "KVN": 2, "S": 7, "D": 128},
    "dtypes": ["float32", "bfloat16"],
    "tolerance": {"bfloat16": {"atol": 0.03}},
    "match": {"optional": ["repeat_interleave"],
              "explain": [{"when": "expected expand(", "near_miss": "fixtures/attention_sinks_masked_fill_nomatch_token_sink.py"}]},
    "near_misses": [
        {"file": "fixtures/attention_sinks_masked_fill_nomatch_token_sink.py",
         "reason": "the sink logit is computed per token from the hidden state, not one learned value per head: FIA v2's learnable_sink takes one logit per head"},
    ],
    "doc_zh": """带可学习sink且用布尔掩码（masked_fill）的注意力替换为TND布局、带learnable_sink的npu_fused_infer_attention_score_v2。

功能
    与attention.attention_sinks相同的计算链，只是掩码以scores.masked_fill(~keep, -inf)作用在
    布尔“可见”张量上（由位置构造或取自tril缓冲区），而不是加性掩码：每个头一个可学习logit拼接
    为额外一列，整行减去最大值后softmax，乘V之前丢掉sink列。建议改为TND布局的FIA v2，
    learnable_sink=sinks，sparse_mode=3加2048 x 2048掩码。
原因
    FIA v1没有sink输入，不用v2就会丢掉sink；eager链还要对整个分数矩阵做拼接和切片。
示例
    logits = logits.masked_fill(~visible, float("-inf"))
    sink = self.sinks.view(1, -1, 1, 1).expand(b, -1, s, 1)
    combined = torch.cat([logits, sink], dim=-1)
    combined = combined - combined.max(dim=-1, keepdim=True).values
    probs = F.softmax(combined.float(), dim=-1).to(q.dtype)[..., :-1]
    out = torch.matmul(probs, v_all)
替代写法
    out = torch_npu.npu_fused_infer_attention_score_v2(
        q_tnd, k_tnd, v_tnd, num_query_heads=N, num_key_value_heads=KVN,
        input_layout="TND", softmax_scale=scaling, atten_mask=mask_2048, sparse_mode=3,
        actual_seq_qlen=cu_seqlens, actual_seq_kvlen=cu_seqlens, learnable_sink=sinks)[0]
修复安全性
    需要前置改造：token按TND打包并提供累加序列长度，以及2048掩码缓冲区。keep掩码必须是因果掩码：
    若模型把它收窄为滑动窗口（visible & (pos_q - pos_k < window)），调用需改用sparse_mode=4，
    pre_tokens=window - 1，next_tokens=0（计划中列为前置条件）。检查项同attention.attention_sinks：
    仅TND，value的head_dim <= 128，有sink时不能量化，TND的head_dim（GQA下head_dim 64文档未列出：
    “未验证”）。数值检查在head_dim 128、因果keep掩码下运行；bfloat16检查的atol放宽为0.03（eager
    减最大值比内核多一次舍入）。
参考
    catalog/attention/npu_fused_infer_attention_score_v2.toml（sink_layout_tnd、
    sink_value_dim_le_128、sink_no_quant）；v1目录no_learnable_sink；pitfalls.md 1.1、1.2。
""",
}


def search(query, key, value, keep, sinks, scaling, n_rep):
    key_states = torch.repeat_interleave(key, dim=1, repeats=n_rep)
    value_states = torch.repeat_interleave(value, dim=1, repeats=n_rep)
    logits = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    logits = logits.masked_fill(~keep, float("-inf"))
    sink_col = sinks.view(1, -1, 1, 1).expand(query.shape[0], -1, query.shape[-2], 1)
    combined = torch.cat([logits, sink_col], dim=-1)
    combined = combined - combined.max(dim=-1, keepdim=True).values
    probs = F.softmax(combined.float(), dim=-1).to(query.dtype)[..., :-1]
    return torch.matmul(probs, value_states)


def search_amax(query, key, value, keep, sinks, scaling, n_rep):
    # amax for the row maximum, the sink probability dropped at the product.
    key_states = torch.repeat_interleave(key, dim=1, repeats=n_rep)
    value_states = torch.repeat_interleave(value, dim=1, repeats=n_rep)
    logits = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    logits = logits.masked_fill(~keep, float("-inf"))
    sink_col = sinks.reshape(1, -1, 1, 1).expand(query.shape[0], -1, query.shape[-2], -1)
    combined = torch.cat([logits, sink_col], dim=-1)
    combined = combined - combined.amax(dim=-1, keepdim=True)
    probs = torch.softmax(combined.float(), dim=-1).to(query.dtype)
    return torch.matmul(probs[..., :-1], value_states)


def replace(query, key, value, keep, sinks, scaling, n_rep):
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


def naive_v1_without_sinks(query, key, value, keep, sinks, scaling, n_rep):
    causal_mask_2048 = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    return torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=query.shape[1], num_key_value_heads=key.shape[1],
        input_layout="BNSD", scale=scaling, atten_mask=causal_mask_2048, sparse_mode=3)[0]
