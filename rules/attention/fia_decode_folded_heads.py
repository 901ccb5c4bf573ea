"""Attention with the heads folded into the batch (`bmm` on (B*N, S, D), BART era) in a decode step becomes `npu_fused_infer_attention_score` with actual_seq_lengths_kv.

What it does
    The same classes run one attention for prefill and decode (BART, MVP, TrOCR, XGLM):
    q, k and v reshaped to (B*N, S, D), `torch.bmm(q, k.transpose(1, 2))`, the additive
    mask added on a (B, N, 1, KV) view (optionally clamped at the dtype's minimum),
    softmax, `torch.bmm(probs, v)`, viewed back and transposed. In a decode step the
    query has one token and the mask only blanks each sequence's padded keys. This rule
    names that step: one `torch_npu.npu_fused_infer_attention_score(q, k, v,
    num_heads=N, num_key_value_heads=N, input_layout='BNSD', scale=1.0,
    actual_seq_lengths_kv=kv_len)[0]` on the (B, N, S, D) tensors before the fold, the
    per-sequence valid lengths in place of the mask. The query was scaled after its
    projection (`q_proj(x) * self.scaling`), so the call passes scale=1.0.
Why
    Decode is memory-bound: the eager form reads the cache through a reshape, writes
    scores and probabilities for every step and launches a kernel per step of the
    chain. The fused kernel reads each KV head once and stops at each sequence's length.
Example
    q = (self.q_proj(x) * self.scaling).view(b, 1, n, d).transpose(1, 2).reshape(b * n, 1, d)
    scores = torch.bmm(q, past_k.reshape(b * n, -1, d).transpose(1, 2))
    scores = scores.view(b, n, 1, -1) + attention_mask
    probs = F.softmax(scores.view(b * n, 1, -1), dim=-1)
    out = torch.bmm(probs, past_v.reshape(b * n, -1, d)).view(b, n, 1, d).transpose(1, 2)
Use instead
    out = torch_npu.npu_fused_infer_attention_score(
        q4, past_k, past_v, num_heads=n, num_key_value_heads=n, input_layout="BNSD",
        scale=1.0, actual_seq_lengths_kv=kv_len)[0].transpose(1, 2)
    where q4 is the (B, N, 1, D) query before `.reshape(b * n, -1, d)`.
Fix safety
    Needs prerequisites. The additive mask says which keys count only as numbers; the
    kernel wants lengths, so the decode loop keeps kv_len (valid keys per sequence) and
    the cache is a fixed buffer (kv_cache.static_cache_prerequisite), not one that grows
    behind `Cache.update`. Lengths describe a valid prefix: a left-padded batch needs its
    padding moved or stays eager. This holds for a cross-attention instance as well
    (keys from the encoder, the encoder's right-padding as lengths). scale must be 1.0:
    the query is already scaled; passing head_dim ** -0.5 would scale it twice. The
    clamp at the dtype's minimum (XGLM) only replaces -inf by the most negative finite
    value. With query length 1 the kernel ignores sparse_mode and pre_tokens, so a
    sliding window is not applied (catalog decode_window_not_applied).
References
    catalog/attention/npu_fused_infer_attention_score.toml; pitfalls.md 1.6;
    reference_chains.md module-attention-gqa.
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "attention.fia_decode_folded_heads",
    "title": "attention with the heads folded into the batch (bmm on (B*N, S, D), BART era), decode step -> FIA BNSD actual_seq_lengths_kv, scale 1.0",
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
    "hints": {"class_names": ["BartAttention", "MvpAttention", "TrOCRAttention", "XGLMAttention", "MarianAttention"]},
    "inputs": {
        "query": {"shape": ["B * N", 1, "D"], "dtype": "act"},
        "key": {"shape": ["B * N", "S", "D"], "dtype": "act"},
        "value": {"shape": ["B * N", "S", "D"], "dtype": "act"},
        "attention_mask": {"shape": ["B", 1, 1, "S"], "dtype": "act", "init": "padded_additive"},
    },
    "sizes": {"B": 3, "N": 8, "S": 16, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"lookalikes": {"lookalike_scaled_after_fold": "fixtures/fia_decode_folded_heads_nomatch_scaled_scores.py"}},
    "near_misses": [
        {"file": "fixtures/fia_decode_folded_heads_nomatch_scaled_scores.py",
         "reason": "the folded scores are scaled after the bmm, not in the query: this rule passes scale=1.0, so the scale would be lost"},
    ],
    "doc_zh": """头折叠进批维的注意力（在(B*N, S, D)上做bmm，BART时期写法）在解码步替换为带actual_seq_lengths_kv的npu_fused_infer_attention_score。

功能
    这些类在预填充和解码中运行同一个注意力（BART、MVP、TrOCR、XGLM）：q、k、v被reshape为
    (B*N, S, D)，torch.bmm(q, k.transpose(1, 2))，加性掩码加在(B, N, 1, KV)视图上（可能再按
    dtype最小值截断），softmax，torch.bmm(probs, v)，再还原并转置。解码步中query只有一个token，
    掩码只屏蔽每条序列填充的key。本规则给出这一步的融合形式：在折叠之前的(B, N, S, D)张量上调用一次
    torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=N, num_key_value_heads=N,
    input_layout='BNSD', scale=1.0, actual_seq_lengths_kv=kv_len)[0]，用每条序列的有效长度代替
    掩码。query在投影之后已经缩放（q_proj(x) * self.scaling），因此调用时传scale=1.0。
原因
    解码受访存限制：eager写法通过reshape读取缓存，每一步都写出分数和概率，链上每一步启动一个
    内核。融合内核每个KV头只读一次，并在每条序列的长度处停止。
示例
    q = (self.q_proj(x) * self.scaling).view(b, 1, n, d).transpose(1, 2).reshape(b * n, 1, d)
    scores = torch.bmm(q, past_k.reshape(b * n, -1, d).transpose(1, 2))
    scores = scores.view(b, n, 1, -1) + attention_mask
    probs = F.softmax(scores.view(b * n, 1, -1), dim=-1)
    out = torch.bmm(probs, past_v.reshape(b * n, -1, d)).view(b, n, 1, d).transpose(1, 2)
替代写法
    out = torch_npu.npu_fused_infer_attention_score(
        q4, past_k, past_v, num_heads=n, num_key_value_heads=n, input_layout="BNSD",
        scale=1.0, actual_seq_lengths_kv=kv_len)[0].transpose(1, 2)
    其中q4是.reshape(b * n, -1, d)之前的(B, N, 1, D)查询。
修复安全性
    需要前置改造。加性掩码只以数值表示哪些key有效；内核需要长度，因此解码循环要维护kv_len
    （每条序列的有效key数），缓存须是固定缓冲区（kv_cache.static_cache_prerequisite），而不是
    在Cache.update背后增长的缓存。长度描述的是有效前缀：左填充的批次须先移动填充，否则保留eager
    实现。这同样适用于交叉注意力实例（key来自编码器，以编码器的右填充作为长度）。scale必须为1.0：
    query已经缩放过，传入head_dim ** -0.5会缩放两次。按dtype最小值截断（XGLM）只是把-inf换成
    最小的有限值。query长度为1时内核忽略sparse_mode和pre_tokens，滑动窗口不会生效（catalog
    decode_window_not_applied）。
参考
    catalog/attention/npu_fused_infer_attention_score.toml；pitfalls.md 1.6；
    reference_chains.md module-attention-gqa。
""",
}


def search(query, key, value, attention_mask):
    # The prefill rule's form (attention.fia_prefill_folded_heads) with one query token.
    bsz, _, q_len, kv_len = attention_mask.shape
    scores = torch.bmm(query, key.transpose(1, 2))
    scores = scores.view(bsz, -1, q_len, kv_len) + attention_mask
    probs = F.softmax(scores.view(-1, q_len, kv_len), dim=-1)
    out = torch.bmm(probs, value)
    return out.view(bsz, -1, q_len, out.shape[-1]).transpose(1, 2)


def search_clamped(query, key, value, attention_mask):
    # XGLM: the masked scores clamped at the dtype's minimum, the softmax taken in float32.
    bsz, _, q_len, kv_len = attention_mask.shape
    scores = torch.bmm(query, key.transpose(1, 2))
    scores = scores.view(bsz, -1, q_len, kv_len) + attention_mask
    scores = torch.max(scores, torch.full((), torch.finfo(scores.dtype).min))
    probs = F.softmax(scores.view(-1, q_len, kv_len), dim=-1, dtype=torch.float32).to(query.dtype)
    out = torch.bmm(probs, value)
    return out.view(bsz, -1, q_len, out.shape[-1]).transpose(1, 2)


def lookalike_scaled_after_fold(query, key, value, attention_mask, scaling=0.125):
    # The scale applied to the folded scores after the bmm: a call with scale=1.0 drops it.
    bsz, _, q_len, kv_len = attention_mask.shape
    scores = torch.bmm(query, key.transpose(1, 2)) * scaling
    scores = scores.view(bsz, -1, q_len, kv_len) + attention_mask
    probs = F.softmax(scores.view(-1, q_len, kv_len), dim=-1)
    out = torch.bmm(probs, value)
    return out.view(bsz, -1, q_len, out.shape[-1]).transpose(1, 2)


def replace(query, key, value, attention_mask):
    # The decode loop knows kv_len; here it is read back from the padded mask's valid prefix.
    bsz = attention_mask.shape[0]
    heads = query.shape[0] // bsz
    q = query.view(bsz, heads, query.shape[1], query.shape[2])
    k = key.view(bsz, heads, key.shape[1], key.shape[2])
    v = value.view(bsz, heads, value.shape[1], value.shape[2])
    kv_len = (attention_mask[:, 0, -1, :] == 0).sum(-1)
    out = torch_npu.npu_fused_infer_attention_score(
        q, k, v, num_heads=heads, num_key_value_heads=heads, input_layout="BNSD", scale=1.0,
        actual_seq_lengths_kv=kv_len.tolist())[0]
    return out.transpose(1, 2)


def naive_without_lengths(query, key, value, attention_mask):
    # Dropping the mask without lengths attends to the padded tail.
    bsz = attention_mask.shape[0]
    heads = query.shape[0] // bsz
    q = query.view(bsz, heads, query.shape[1], query.shape[2])
    k = key.view(bsz, heads, key.shape[1], key.shape[2])
    v = value.view(bsz, heads, value.shape[1], value.shape[2])
    out = torch_npu.npu_fused_infer_attention_score(
        q, k, v, num_heads=heads, num_key_value_heads=heads, input_layout="BNSD", scale=1.0)[0]
    return out.transpose(1, 2)
