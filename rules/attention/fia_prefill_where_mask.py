"""Attention masked with `torch.where` on a boolean causal buffer becomes `npu_fused_infer_attention_score` with sparse_mode=3.

What it does
    Finds the GPT-J / GPT-2 style attention core: `scores = q @ kᵀ`, then
    `torch.where(causal_mask, scores, mask_value)` with a boolean lower-triangular
    buffer (True = may attend), then the scale (`* scale` or `/ sqrt(head_dim)`),
    a softmax and the product with V. GQA head repetition before it is optional.
    It proposes one `torch_npu.npu_fused_infer_attention_score(q, k, v,
    num_heads=N, num_key_value_heads=KVN, input_layout='BNSD', scale=scale,
    atten_mask=mask_2048, sparse_mode=3)[0]`.
Why
    The boolean select writes a second (B, N, S, S) tensor next to the scores, and the
    softmax a third. The fused kernel keeps the scores on chip and applies the causal
    structure from its compressed mask, so neither is materialised.
Example
    scores = torch.matmul(query, key.transpose(-1, -2))
    scores = torch.where(self.bias[:, :, k_len - q_len:k_len, :k_len], scores, mask_value)
    probs = torch.softmax(scores / self.scale_attn, dim=-1).to(value.dtype)
    out = torch.matmul(probs, value)
Use instead
    out = torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=N, num_key_value_heads=KVN, input_layout="BNSD",
        scale=1 / self.scale_attn, atten_mask=self.causal_mask_2048 if q_len > 1 else None, sparse_mode=3)[0]
Fix safety
    Needs prerequisites. The compressed (2048, 2048) mask (`triu(ones, 1)`, True =
    masked) replaces the model's buffer: that is only right when the buffer is the
    causal lower triangle sliced to the current window, which the porting engineer
    confirms where the buffer is built (a padding or local mask is not causal-only).
    The kernel's default scale is 1.0: a model dividing by sqrt(head_dim) passes its
    reciprocal. Models that return the attention probabilities (output_attentions)
    lose them. Checked like the HF eager form: GQA ratio, head_dim, dtype.
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
    "id": "attention.fia_prefill_where_mask",
    "title": "attention masked by torch.where on a bool causal buffer (GPT-J style) -> FIA sparse_mode=3 with the 2048x2048 mask",
    "module": "attention",
    "apis": ["npu_fused_infer_attention_score"],
    "stages": ["prefill"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "causal_mask_2048",
         "en": "Create the compressed causal mask once: torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1) as a buffer.",
         "zh": "一次性创建压缩因果掩码缓冲区：torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)。",
         "mechanical": True},
        {"id": "bool_buffer_is_causal",
         "en": "Confirm the boolean buffer given to torch.where is the causal lower triangle (no padding or local window in it).",
         "zh": "确认传给torch.where的布尔缓冲区就是因果下三角（其中没有padding或局部窗口）。",
         "mechanical": False},
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
        "npu_fused_infer_attention_score:no_learnable_sink",
        "npu_fused_infer_attention_score:causal_modes_need_causal_only_mask",
        "npu_fused_infer_attention_score:no_alibi_bias"
    ],
    # a plain softmax over the selected scores: no sink logit joins them
    "facts": {"stage": "prefill", "layout": "BNSD", "sparse_mode": 3, "causal": True, "attention_sinks": False},
    "hints": {"class_names": ["GPTJAttention", "GPTNeoSelfAttention", "GPT2Attention"]},
    "inputs": {
        "query": {"shape": ["B", "N", "S", "D"], "dtype": "act"},
        "key": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "value": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "causal_mask": {"shape": [1, 1, "S", "S"], "dtype": "bool", "init": "causal_keep"},
        "mask_value": {"dtype": "param", "value": -1e9},
        "scaling": {"dtype": "param", "expr": "D ** -0.5"},
        "n_rep": {"dtype": "param", "expr": "N // KVN"},
    },
    "sizes": {"B": 2, "N": 8, "KVN": 2, "S": 9, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"optional": ["repeat_interleave"],
              "explain": [{"when": "expected matmul(...), found add", "near_miss": "fixtures/fia_prefill_where_mask_nomatch_alibi_bias.py"}]},
    "near_misses": [
        {"file": "fixtures/fia_prefill_where_mask_nomatch_alibi_bias.py",
         "reason": "the scores carry an added position bias (ALiBi) before the select: the compressed causal mask alone does not reproduce it"},
    ],
    "doc_zh": """以布尔因果缓冲区做torch.where掩码的注意力替换为sparse_mode=3的npu_fused_infer_attention_score。

功能
    识别GPT-J / GPT-2写法的注意力核心：scores = q @ kᵀ，然后
    torch.where(causal_mask, scores, mask_value)，其中causal_mask是布尔下三角缓冲区
    （True表示可以关注），再乘以缩放（* scale或/ sqrt(head_dim)）、softmax并与V相乘。
    之前的GQA头重复可有可无。建议调用一次torch_npu.npu_fused_infer_attention_score(q, k, v,
    num_heads=N, num_key_value_heads=KVN, input_layout='BNSD', scale=scale,
    atten_mask=mask_2048, sparse_mode=3)[0]。
原因
    布尔选择在分数旁再写一个(B, N, S, S)张量，softmax再写第三个。融合内核把分数留在片上，
    用压缩掩码施加因果结构，两者都不需要物化。
示例
    scores = torch.matmul(query, key.transpose(-1, -2))
    scores = torch.where(self.bias[:, :, k_len - q_len:k_len, :k_len], scores, mask_value)
    probs = torch.softmax(scores / self.scale_attn, dim=-1).to(value.dtype)
    out = torch.matmul(probs, value)
替代写法
    out = torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=N, num_key_value_heads=KVN, input_layout="BNSD",
        scale=1 / self.scale_attn, atten_mask=self.causal_mask_2048 if q_len > 1 else None, sparse_mode=3)[0]
修复安全性
    需要前置改造。压缩的(2048, 2048)掩码（triu(ones, 1)，True表示屏蔽）取代模型的缓冲区：
    只有当该缓冲区就是按当前窗口切片的因果下三角时才正确，须由移植工程师在构建缓冲区处确认
    （padding掩码或局部窗口掩码不只是因果）。内核默认scale为1.0：除以sqrt(head_dim)的模型
    要传入其倒数。返回注意力概率（output_attentions）的模型将失去该输出。检查项与HF eager
    写法相同：GQA比例、head_dim、数据类型。
    经同一段代码执行的解码步（query只有一个token）不传掩码：FIA的增量路径忽略sparse_mode，
    会把2048掩码当作(B, KV_S)掩码读取，因此替换代码仅在query多于一个token时传入atten_mask；
    当缓存恰好只含有效的键时，该步与eager代码一样看到全部键。
参考
    catalog/attention/npu_fused_infer_attention_score.toml；pitfalls.md 1.1、1.3、1.5；
    reference_chains.md module-attention-gqa。
""",
}


def search(query, key, value, causal_mask, mask_value, scaling, n_rep):
    # GPT-J: select on the bool buffer, then the scale (`/ scale_attn` is read as `* scaling`).
    key_states = torch.repeat_interleave(key, n_rep, dim=1)
    value_states = torch.repeat_interleave(value, n_rep, dim=1)
    scores = torch.matmul(query, key_states.transpose(2, 3))
    scores = torch.where(causal_mask, scores, mask_value) * scaling
    probs = F.softmax(scores, dim=-1).to(value.dtype)
    return torch.matmul(probs, value_states)


def search_scale_first(query, key, value, causal_mask, mask_value, scaling, n_rep):
    # GPT-2 / GPT-Neo order: scale the scores, then select.
    key_states = torch.repeat_interleave(key, n_rep, dim=1)
    value_states = torch.repeat_interleave(value, n_rep, dim=1)
    scores = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    scores = torch.where(causal_mask, scores, mask_value)
    probs = F.softmax(scores, dim=-1).to(value.dtype)
    return torch.matmul(probs, value_states)


def replace(query, key, value, causal_mask, mask_value, scaling, n_rep):
    causal_mask_2048 = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    return torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=query.shape[1], num_key_value_heads=key.shape[1],
        input_layout="BNSD", scale=scaling, atten_mask=causal_mask_2048 if query.shape[2] > 1 else None,
        sparse_mode=3)[0]


def naive_keep_mask_as_atten_mask(query, key, value, causal_mask, mask_value, scaling, n_rep):
    # The model's buffer is True where attending is allowed; FIA reads True as masked.
    return torch_npu.npu_fused_infer_attention_score(
        query, key, value, num_heads=query.shape[1], num_key_value_heads=key.shape[1],
        input_layout="BNSD", scale=scaling, atten_mask=causal_mask, sparse_mode=0)[0]
