"""Absorbed MLA's attention core over the latent and rope-key caches becomes FIA v2 with `query_rope`/`key_rope`.

What it does
    Finds the attention core of absorbed MLA: each head's folded query (width
    `kv_lora_rank`) is scored against the latent cache, its rotated part (width
    `qk_rope_head_dim`) against the one shared rope-key cache, the two scores are
    added and scaled, the causal mask (when there is one) is added, a float32 softmax
    runs over the keys, and the probabilities read the latent cache again as the
    values. It proposes one `torch_npu.npu_fused_infer_attention_score_v2` in MLA form:
    the latent cache is both key and value with one KV head (D 512), the rotated
    parts go in as `query_rope`/`key_rope` (D 64), `sparse_mode=3` with the compressed
    2048x2048 causal mask, and each sequence's valid cache length as
    `actual_seq_kvlen`, so the whole preallocated cache is passed without a copy.
Why
    The eager path writes a [b, s, heads, t] score tensor twice (content and position),
    adds them, writes the probabilities in float32 and reads the latent cache twice. The
    fused kernel keeps scores on chip and reads each cached latent once for both
    products. It is the attention step of the reference MLA chains in prefill (after
    `npu_kv_rmsnorm_rope_cache`) and decode (after `npu_mla_prolog_v3`, before the V
    absorb).
Example
    scores = (torch.einsum("bshc,btc->bsht", q_nope, self.kv_cache[:bsz, :end_pos]) +
              torch.einsum("bshr,btr->bsht", q_pe, self.pe_cache[:bsz, :end_pos])) * self.softmax_scale
    if mask is not None:
        scores += mask.unsqueeze(1)
    scores = scores.softmax(dim=-1, dtype=torch.float32).type_as(x)
    x = torch.einsum("bsht,btc->bshc", scores, self.kv_cache[:bsz, :end_pos])
Use instead
    # once: self.causal_mask_2048 = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    latent = self.kv_cache[:bsz].unsqueeze(2)  # [b, max_seq_len, 1, kv_lora_rank]
    x = torch_npu.npu_fused_infer_attention_score_v2(
        q_nope, latent, latent, query_rope=q_pe, key_rope=self.pe_cache[:bsz].unsqueeze(2),
        num_query_heads=self.n_local_heads, num_key_value_heads=1, input_layout="BSND",
        softmax_scale=self.softmax_scale, atten_mask=self.causal_mask_2048, sparse_mode=3,
        actual_seq_kvlen=[end_pos] * bsz)[0]
Fix safety
    Needs prerequisites: the compressed causal mask built once (mechanical). In decode
    (one query token, no mask in the model) sparse_mode 3 lets the token see every
    cached key, as the model does; the reference decode chain passes sparse_mode 0 and
    no mask, which is the same. The rope parts may be in the model's pair order or
    de-interleaved (after `mla.mla_prolog_v3` or `mla.kv_rmsnorm_rope_cache`) as long
    as query and cache agree, since the kernel only takes their dot product. Checked
    with the operator's own sizes (D = kv_lora_rank, one KV head): D 512 and rope 64,
    query heads per TP rank a power of two up to 128, sparse_mode 0/3/4/9, the layout,
    and no fake-quantised (int8 cache, bf16 query) form. The GQA ratio limit of 64 is
    not checked: the MLA section allows 128 query heads over one KV head.
References
    catalog/attention/npu_fused_infer_attention_score_v2.toml (MLA constraints);
    reference_chains.md (module-attention-mla-absorb, model-infer-kvcache).
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "mla.fia_absorb",
    "title": "absorbed MLA attention over latent + rope-key caches -> FIA v2 with query_rope/key_rope (D 512, one KV head)",
    "module": "mla",
    "apis": ["npu_fused_infer_attention_score_v2"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "causal_mask_2048",
         "en": "Create the compressed causal mask once: torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1) as a buffer.",
         "zh": "一次性创建压缩因果掩码缓冲区：torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)。",
         "mechanical": True},
    ],
    "checks": [
        "npu_fused_infer_attention_score_v2:query_dtype",
        "npu_fused_infer_attention_score_v2:gqa_heads_divisible",
        "npu_fused_infer_attention_score_v2:layout_supported",
        "npu_fused_infer_attention_score_v2:prefill_batch_le_65536",
        "npu_fused_infer_attention_score_v2:prefill_heads_le_256",
        "npu_fused_infer_attention_score_v2:prefill_head_dim_le_512",
        "npu_fused_infer_attention_score_v2:prefill_head_dim_multiple_16",
        "npu_fused_infer_attention_score_v2:prefill_seq_le_20m",
        "npu_fused_infer_attention_score_v2:prefill_bsh_heads_times_dim",
        "npu_fused_infer_attention_score_v2:decode_batch_le_65536",
        "npu_fused_infer_attention_score_v2:decode_heads_le_256",
        "npu_fused_infer_attention_score_v2:decode_kv_seq_le_262144",
        "npu_fused_infer_attention_score_v2:decode_head_dim_le_512",
        "npu_fused_infer_attention_score_v2:sparse_mode_values",
        "npu_fused_infer_attention_score_v2:causal_use_compressed_mask",
        "npu_fused_infer_attention_score_v2:mla_query_head_dim",
        "npu_fused_infer_attention_score_v2:mla_rope_dim_64",
        "npu_fused_infer_attention_score_v2:mla512_kv_heads_1",
        "npu_fused_infer_attention_score_v2:mla512_query_heads_pow2",
        "npu_fused_infer_attention_score_v2:mla512_sparse_mode",
        "npu_fused_infer_attention_score_v2:mla512_layouts",
        "npu_fused_infer_attention_score_v2:mla512_paged_block_size",
        "npu_fused_infer_attention_score_v2:mla512_full_quant_only",
        "npu_fused_infer_attention_score_v2:causal_modes_drop_window",
        "npu_fused_infer_attention_score_v2:causal_modes_need_causal_only_mask",
        "npu_fused_infer_attention_score_v2:no_alibi_bias"
    ],
    # the pattern is a plain softmax over the scores (no sink logit joined to them)
    "facts": {"mla": True, "layout": "BSND", "sparse_mode": 3, "causal": True, "attention_sinks": False},
    # the operator sees the absorbed form: the latent is both key and value, one KV head
    "operand_facts": {"head_dim": "kv_lora_rank", "v_head_dim": "kv_lora_rank", "num_kv_heads": "1"},
    "hints": {"class_names": ["MLA", "DeepseekV3Attention", "MultiHeadLatentAttention"]},
    "inputs": {
        "q_latent": {"shape": ["B", "S", "N", "C"], "dtype": "act"},
        "q_rot": {"shape": ["B", "S", "N", "R"], "dtype": "act"},
        "kv_cache": {"shape": ["B + 1", "START + S + 2", "C"], "dtype": "act", "scale": 0.5},
        "pe_cache": {"shape": ["B + 1", "START + S + 2", "R"], "dtype": "act"},
        "mask": {"shape": ["S", "START + S"], "dtype": "act", "init": "causal_additive"},
        "softmax_scale": {"dtype": "param", "expr": "(128 + R) ** -0.5"},
        "end_pos": {"dtype": "param", "expr": "START + S"},
    },
    "sizes": {"B": 2, "S": 4, "N": 4, "C": 512, "R": 64, "START": 3},
    "dtypes": ["float32", "bfloat16"],
    "match": {"optional": ["add"],
              "lookalikes": {"lookalike_expanded_kv": {
                  "near_miss": "fixtures/fia_absorb_nomatch_expanded_kv.py",
                  "inputs": {"k_cache": {"shape": ["B + 1", "START + S + 2", "N", "C + R"], "dtype": "act"},
                             "v_cache": {"shape": ["B + 1", "START + S + 2", "N", "R"], "dtype": "act"}}}}},
    "near_misses": [
        {"file": "fixtures/fia_absorb_nomatch_expanded_kv.py",
         "reason": "the keys and values are expanded per head and cached that way (naive MLA): FIA's MLA form reads the latent cache with one KV head, so the attention has to be rewritten to the absorbed form first"},
    ],
    "doc_zh": """吸收式MLA在潜在缓存与rope key缓存上的注意力核心替换为带query_rope/key_rope的FIA v2。

功能
    识别吸收式MLA的注意力核心：每个头折叠后的query（宽度kv_lora_rank）与潜在缓存打分，其旋转
    部分（宽度qk_rope_head_dim）与所有头共享的rope key缓存打分，两者相加并缩放，存在因果掩码时
    加上掩码，对key做float32 softmax，概率再读取潜在缓存作为value。建议改为MLA形式的一次
    torch_npu.npu_fused_infer_attention_score_v2：潜在缓存同时作为key与value、KV头数为1（D为
    512），旋转部分以query_rope/key_rope传入（D为64），sparse_mode=3配合压缩的2048x2048因果掩码，
    并以actual_seq_kvlen传入每条序列的有效缓存长度，从而无需拷贝即可传入整个预分配缓存。
原因
    eager路径两次写出[b, s, 头数, t]的得分张量（内容与位置）、相加、以float32写出概率，并两次读取
    潜在缓存。融合内核把得分留在片上，两个乘积只读一次缓存的潜在向量。它是参考MLA链中prefill
    （npu_kv_rmsnorm_rope_cache之后）与decode（npu_mla_prolog_v3之后、V吸收之前）的注意力步骤。
示例
    scores = (torch.einsum("bshc,btc->bsht", q_nope, self.kv_cache[:bsz, :end_pos]) +
              torch.einsum("bshr,btr->bsht", q_pe, self.pe_cache[:bsz, :end_pos])) * self.softmax_scale
    if mask is not None:
        scores += mask.unsqueeze(1)
    scores = scores.softmax(dim=-1, dtype=torch.float32).type_as(x)
    x = torch.einsum("bsht,btc->bshc", scores, self.kv_cache[:bsz, :end_pos])
替代写法
    # 一次性：self.causal_mask_2048 = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    latent = self.kv_cache[:bsz].unsqueeze(2)  # [b, max_seq_len, 1, kv_lora_rank]
    x = torch_npu.npu_fused_infer_attention_score_v2(
        q_nope, latent, latent, query_rope=q_pe, key_rope=self.pe_cache[:bsz].unsqueeze(2),
        num_query_heads=self.n_local_heads, num_key_value_heads=1, input_layout="BSND",
        softmax_scale=self.softmax_scale, atten_mask=self.causal_mask_2048, sparse_mode=3,
        actual_seq_kvlen=[end_pos] * bsz)[0]
修复安全性
    需要前置改造：一次性构造压缩因果掩码（可机械完成）。decode时（一个query token，模型中无掩码）
    sparse_mode 3让该token看到全部已缓存的key，与模型一致；参考decode链传sparse_mode 0且不传掩码，
    结果相同。rope部分可以是模型的成对顺序，也可以是解交错顺序（应用mla.mla_prolog_v3或
    mla.kv_rmsnorm_rope_cache之后），只要query与缓存一致即可，因为内核只计算二者的点积。检查项按
    算子自身的尺寸（D = kv_lora_rank，KV头数为1）评估：D为512且rope为64，每个TP rank的query头数为
    不超过128的2的幂，sparse_mode为0/3/4/9，布局，以及不支持伪量化（int8缓存配bf16 query）。
    不检查GQA比例不超过64的限制：MLA章节允许128个query头对应1个KV头。
参考
    catalog/attention/npu_fused_infer_attention_score_v2.toml（MLA约束）；reference_chains.md
    （module-attention-mla-absorb、model-infer-kvcache）。
""",
}


def search(q_latent, q_rot, kv_cache, pe_cache, mask, softmax_scale, end_pos):
    b = q_latent.size(0)
    content = torch.einsum("bshc,btc->bsht", q_latent, kv_cache[:b, :end_pos])
    position = torch.einsum("bshr,btr->bsht", q_rot, pe_cache[:b, :end_pos])
    scores = (content + position) * softmax_scale
    scores = scores + mask.unsqueeze(1)
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q_latent.dtype)
    return torch.einsum("bsht,btc->bshc", probs, kv_cache[:b, :end_pos])


def lookalike_expanded_kv(q_latent, q_rot, kv_cache, pe_cache, mask, softmax_scale, end_pos, k_cache=None,
                          v_cache=None):
    # naive MLA: per-head keys (no-position part and rope part side by side) and values cached expanded
    b = q_latent.size(0)
    q = torch.cat((q_latent, q_rot), dim=-1)
    scores = torch.einsum("bshd,bthd->bsht", q, k_cache[:b, :end_pos]) * softmax_scale
    scores = scores + mask.unsqueeze(1)
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q_latent.dtype)
    return torch.einsum("bsht,bthd->bshd", probs, v_cache[:b, :end_pos])


def replace(q_latent, q_rot, kv_cache, pe_cache, mask, softmax_scale, end_pos):
    b = q_latent.size(0)
    causal_mask_2048 = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)
    latent = kv_cache[:b].unsqueeze(2)
    return torch_npu.npu_fused_infer_attention_score_v2(
        q_latent, latent, latent, query_rope=q_rot, key_rope=pe_cache[:b].unsqueeze(2),
        num_query_heads=q_latent.size(2), num_key_value_heads=1, input_layout="BSND",
        softmax_scale=softmax_scale, atten_mask=causal_mask_2048, sparse_mode=3,
        actual_seq_kvlen=[end_pos] * b)[0]


def naive_decode_form_in_prefill(q_latent, q_rot, kv_cache, pe_cache, mask, softmax_scale, end_pos):
    # The decode chain's sparse_mode 0 without a mask, reused where several tokens are scored:
    # each token then also attends to the tokens after it.
    b = q_latent.size(0)
    latent = kv_cache[:b].unsqueeze(2)
    return torch_npu.npu_fused_infer_attention_score_v2(
        q_latent, latent, latent, query_rope=q_rot, key_rope=pe_cache[:b].unsqueeze(2),
        num_query_heads=q_latent.size(2), num_key_value_heads=1, input_layout="BSND",
        softmax_scale=softmax_scale, actual_seq_kvlen=[end_pos] * b)[0]
