"""Attention with the heads folded into the batch (`bmm` on (B*N, S, D), BART era) in prefill becomes `npu_fused_infer_attention_score` with sparse_mode=3.

What it does
    Finds the attention core of the older HF encoder-decoder and GPT-style classes
    (BART, MVP, TrOCR, XGLM, Marian lineage): q, k and v are reshaped to
    (B*N, S, D), the scores are `torch.bmm(q, k.transpose(1, 2))`, the additive mask is
    added on a (B, N, S, KV) view of them (optionally clamped at the dtype's minimum),
    then a softmax over the keys and `torch.bmm(probs, v)`, viewed back to
    (B, N, S, D) and transposed. These classes scale the query before the head split
    (`q_proj(x) * self.scaling`), so the bound query already carries the scale and the
    call passes scale=1.0. It proposes one `torch_npu.npu_fused_infer_attention_score(q,
    k, v, num_heads=N, num_key_value_heads=N, input_layout='BNSD', scale=1.0,
    atten_mask=mask_2048, sparse_mode=3)[0]` on the (B, N, S, D) tensors the code has
    before folding the heads.
Why
    The eager form writes the (B*N, S, KV) scores, the masked scores and the
    probabilities to HBM. The fused kernel tiles over the keys with the softmax on chip:
    memory goes from O(S²) to O(S), and the reshapes into and out of the folded batch go
    away.
Example
    q = (self.q_proj(x) * self.scaling).view(b, s, n, d).transpose(1, 2).reshape(b * n, s, d)
    scores = torch.bmm(q, k.reshape(b * n, -1, d).transpose(1, 2))
    scores = scores.view(b, n, s, -1) + attention_mask
    probs = F.softmax(scores.view(b * n, s, -1), dim=-1)
    out = torch.bmm(probs, v.reshape(b * n, -1, d)).view(b, n, s, d).transpose(1, 2)
Use instead
    out = torch_npu.npu_fused_infer_attention_score(
        q4, k4, v4, num_heads=n, num_key_value_heads=n, input_layout="BNSD", scale=1.0,
        atten_mask=self.causal_mask_2048 if s > 1 else None, sparse_mode=3)[0].transpose(1, 2)
    where q4, k4, v4 are the (B, N, S, D) tensors before `.reshape(b * n, -1, d)`.
Fix safety
    Needs prerequisites. The compressed (2048, 2048) causal mask (`triu(ones, 1)`, True
    = masked) replaces the model's additive mask: only right where that mask is causal
    only. These classes also serve as cross-attention (`key_value_states` given, keys
    from the encoder under the encoder's padding mask): such an instance is not causal
    and keeps its own mask, so the rewrite applies to the self-attention instances only,
    which the porting engineer confirms. The checks refuse configurations whose mask
    carries more than the causal limit (an encoder's two-way attention, windows, ALiBi)
    and ask whether batches are padded. scale must be 1.0 here: the query is already
    scaled, and the kernel's default happens to be 1.0 too, but it is passed
    explicitly so that a later move of the scale out of the query is not silently
    lost. The clamp at the dtype's minimum (XGLM) only replaces -inf by the most
    negative finite value; with at least one key visible per row it changes no
    probability. Dropout on the probabilities is the identity at inference.
    A decode step through the same code (one query token) gets no mask: FIA's
    incremental path ignores sparse_mode and would read the 2048 mask as a (B, KV_S)
    one, so the replacement passes atten_mask only while the query has more than one
    token.
References
    catalog/attention/npu_fused_infer_attention_score.toml; pitfalls.md 1.3, 1.5, 1.6;
    reference_chains.md module-attention-gqa.
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "attention.fia_prefill_folded_heads",
    "title": "causal attention with the heads folded into the batch (bmm on (B*N, S, D), BART era), prefill -> FIA BNSD sparse_mode=3, scale 1.0",
    "module": "attention",
    "apis": ["npu_fused_infer_attention_score"],
    "stages": ["prefill"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "causal_mask_2048",
         "en": "Create the compressed causal mask once: torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1) as a buffer.",
         "zh": "一次性创建压缩因果掩码缓冲区：torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)。",
         "mechanical": True},
        {"id": "self_attention_instance",
         "en": "Apply the rewrite to the self-attention calls only: where the class is called with key_value_states (cross-attention over the encoder, under its padding mask), keep the eager path or pass that mask with sparse_mode 0.",
         "zh": "只对自注意力调用做此改写：该类以key_value_states调用时（对编码器的交叉注意力，使用其padding掩码），保留eager路径，或以sparse_mode 0传入该掩码。",
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
        "npu_fused_infer_attention_score:non_causal_avoid_tnd",
        "npu_fused_infer_attention_score:no_learnable_sink",
        "npu_fused_infer_attention_score:causal_modes_need_causal_only_mask",
        "npu_fused_infer_attention_score:no_alibi_bias"
    ],
    # a plain softmax over the scores: no sink logit joins them
    "facts": {"stage": "prefill", "layout": "BNSD", "sparse_mode": 3, "causal": True, "attention_sinks": False},
    "hints": {"class_names": ["BartAttention", "MvpAttention", "TrOCRAttention", "XGLMAttention", "MarianAttention"]},
    "inputs": {
        "query": {"shape": ["B * N", "S", "D"], "dtype": "act"},
        "key": {"shape": ["B * N", "S", "D"], "dtype": "act"},
        "value": {"shape": ["B * N", "S", "D"], "dtype": "act"},
        "attention_mask": {"shape": ["B", 1, "S", "S"], "dtype": "act", "init": "causal_additive"},
    },
    "sizes": {"B": 2, "N": 8, "S": 9, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"lookalikes": {"lookalike_scaled_after_fold": "fixtures/fia_prefill_folded_heads_nomatch_scaled_scores.py"}},
    "near_misses": [
        {"file": "fixtures/fia_prefill_folded_heads_nomatch_scaled_scores.py",
         "reason": "the folded scores are scaled after the bmm, not in the query: this rule passes scale=1.0, so the scale would be lost"},
    ],
    "doc_zh": """头折叠进批维的注意力（在(B*N, S, D)上做bmm，BART时期写法）在预填充阶段替换为sparse_mode=3的npu_fused_infer_attention_score。

功能
    识别较早的HF编码器-解码器与GPT类注意力核心（BART、MVP、TrOCR、XGLM、Marian一脉）：q、k、v被
    reshape为(B*N, S, D)，分数为torch.bmm(q, k.transpose(1, 2))，加性掩码加在分数的
    (B, N, S, KV)视图上（可能再按dtype最小值截断），然后对key做softmax并计算
    torch.bmm(probs, v)，再还原为(B, N, S, D)并转置。这些类在拆分头之前就缩放了query
    （q_proj(x) * self.scaling），所以绑定的query已含缩放，调用时传scale=1.0。建议在代码折叠头之前的
    (B, N, S, D)张量上调用一次torch_npu.npu_fused_infer_attention_score(q, k, v, num_heads=N,
    num_key_value_heads=N, input_layout='BNSD', scale=1.0, atten_mask=mask_2048, sparse_mode=3)[0]。
原因
    eager写法把(B*N, S, KV)的分数、加掩码后的分数和概率都写回HBM。融合内核沿key分块、softmax在片上
    完成：显存从O(S²)降到O(S)，进出折叠批维的reshape也不再需要。
示例
    q = (self.q_proj(x) * self.scaling).view(b, s, n, d).transpose(1, 2).reshape(b * n, s, d)
    scores = torch.bmm(q, k.reshape(b * n, -1, d).transpose(1, 2))
    scores = scores.view(b, n, s, -1) + attention_mask
    probs = F.softmax(scores.view(b * n, s, -1), dim=-1)
    out = torch.bmm(probs, v.reshape(b * n, -1, d)).view(b, n, s, d).transpose(1, 2)
替代写法
    out = torch_npu.npu_fused_infer_attention_score(
        q4, k4, v4, num_heads=n, num_key_value_heads=n, input_layout="BNSD", scale=1.0,
        atten_mask=self.causal_mask_2048 if s > 1 else None, sparse_mode=3)[0].transpose(1, 2)
    其中q4、k4、v4是.reshape(b * n, -1, d)之前的(B, N, S, D)张量。
修复安全性
    需要前置改造。压缩的(2048, 2048)因果掩码（triu(ones, 1)，True表示屏蔽）取代模型的加性掩码：
    只有该掩码仅含因果限制时才正确。这些类也用作交叉注意力（传入key_value_states，key来自编码器，
    使用编码器的padding掩码）：这样的实例不是因果的，须保留自己的掩码，因此改写只适用于自注意力实例，
    由移植工程师确认。检查项会拒绝掩码超出因果限制的配置（编码器的双向注意力、窗口、ALiBi），
    并询问批次是否有填充。此处scale必须为1.0：query已经缩放过；内核默认值恰好也是1.0，但仍显式
    传入，以免日后把缩放移出query时被静默丢失。按dtype最小值截断（XGLM）只是把-inf换成最小的
    有限值；每行至少有一个可见key时不改变任何概率。推理时概率上的dropout是恒等映射。
    经同一段代码执行的解码步（query只有一个token）不传掩码：FIA的增量路径忽略sparse_mode，
    会把2048掩码当作(B, KV_S)掩码读取，因此替换代码仅在query多于一个token时传入atten_mask。
参考
    catalog/attention/npu_fused_infer_attention_score.toml；pitfalls.md 1.3、1.5、1.6；
    reference_chains.md module-attention-gqa。
""",
}


def search(query, key, value, attention_mask):
    # BART / MVP / TrOCR: q, k, v arrive as (B*N, S, D) (the model's `.reshape(*proj_shape)`);
    # the mask is added on a (B, N, S, KV) view of the folded scores.
    bsz, _, q_len, kv_len = attention_mask.shape
    scores = torch.bmm(query, key.transpose(1, 2))
    scores = scores.view(bsz, -1, q_len, kv_len) + attention_mask
    probs = F.softmax(scores.view(-1, q_len, kv_len), dim=-1)
    out = torch.bmm(probs, value)
    return out.view(bsz, -1, q_len, out.shape[-1]).transpose(1, 2)


def search_clamped(query, key, value, attention_mask):
    # XGLM: the masked scores are clamped at the dtype's minimum, the softmax taken in float32.
    bsz, _, q_len, kv_len = attention_mask.shape
    scores = torch.bmm(query, key.transpose(1, 2))
    scores = scores.view(bsz, -1, q_len, kv_len) + attention_mask
    scores = torch.max(scores, torch.full((), torch.finfo(scores.dtype).min))
    probs = F.softmax(scores.view(-1, q_len, kv_len), dim=-1, dtype=torch.float32).to(query.dtype)
    out = torch.bmm(probs, value)
    return out.view(bsz, -1, q_len, out.shape[-1]).transpose(1, 2)


def lookalike_scaled_after_fold(query, key, value, attention_mask, scaling=0.125):
    # The scale applied to the folded scores after the bmm: a call with scale=1.0 drops it
    # (the numeric test uses 0.125 = 64 ** -0.5).
    bsz, _, q_len, kv_len = attention_mask.shape
    scores = torch.bmm(query, key.transpose(1, 2)) * scaling
    scores = scores.view(bsz, -1, q_len, kv_len) + attention_mask
    probs = F.softmax(scores.view(-1, q_len, kv_len), dim=-1)
    out = torch.bmm(probs, value)
    return out.view(bsz, -1, q_len, out.shape[-1]).transpose(1, 2)


def replace(query, key, value, attention_mask):
    # The model holds these as (B, N, S, D) before folding; here they are unfolded again.
    bsz = attention_mask.shape[0]
    heads = query.shape[0] // bsz
    q = query.view(bsz, heads, query.shape[1], query.shape[2])
    k = key.view(bsz, heads, key.shape[1], key.shape[2])
    v = value.view(bsz, heads, value.shape[1], value.shape[2])
    causal_mask_2048 = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    out = torch_npu.npu_fused_infer_attention_score(
        q, k, v, num_heads=heads, num_key_value_heads=heads, input_layout="BNSD", scale=1.0,
        atten_mask=causal_mask_2048 if q.shape[2] > 1 else None, sparse_mode=3)[0]
    return out.transpose(1, 2)


def naive_head_dim_scale(query, key, value, attention_mask):
    # Passing the usual head_dim ** -0.5 scales the already scaled query a second time.
    bsz = attention_mask.shape[0]
    heads = query.shape[0] // bsz
    q = query.view(bsz, heads, query.shape[1], query.shape[2])
    k = key.view(bsz, heads, key.shape[1], key.shape[2])
    v = value.view(bsz, heads, value.shape[1], value.shape[2])
    causal_mask_2048 = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    out = torch_npu.npu_fused_infer_attention_score(
        q, k, v, num_heads=heads, num_key_value_heads=heads, input_layout="BNSD",
        scale=q.shape[-1] ** -0.5, atten_mask=causal_mask_2048, sparse_mode=3)[0]
    return out.transpose(1, 2)
