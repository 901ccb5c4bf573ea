"""Absorbed MLA attention restricted to an indexer's top-k keys becomes `npu_sparse_flash_attention`.

What it does
    Finds DeepSeek-V3.2's sparse attention core: the absorbed-MLA scores (folded query
    against the latent cache plus the rotated part against the rope-key cache, scaled)
    get a mask that is minus infinity everywhere except at the key positions an indexer
    chose for each query (`full(-inf).scatter_(-1, topk_indices, 0)`), plus the causal
    mask when there is one; a float32 softmax follows, and the probabilities read the
    latent cache as the values. It proposes one `torch_npu.npu_sparse_flash_attention`
    in MLA-absorb mode (`attention_mode=2`): the latent cache is key and value (one KV
    head, D 512), the rotated parts are `query_rope`/`key_rope` (D 64), the indices are
    `sparse_indices` and `sparse_mode=3` keeps the causal limit.
Why
    The eager path scores every cached key and then throws all but top-k of them away,
    writing a [b, s, heads, t] score tensor and a [b, s, t] mask per layer. The fused
    kernel gathers only the chosen keys, so its work grows with top-k (2048) instead of
    the context length. It is the attention step of the reference MLA + indexer chain,
    after `npu_lightning_indexer`.
Example
    index_mask = torch.full((bsz, seqlen, end_pos), float("-inf"), device=x.device).scatter_(-1, topk_indices, 0)
    if mask is not None:
        index_mask += mask
    scores += index_mask.unsqueeze(2)
    scores = scores.softmax(dim=-1, dtype=torch.float32).type_as(x)
    x = torch.einsum("bsht,btc->bshc", scores, self.kv_cache[:bsz, :end_pos])
Use instead
    latent = self.kv_cache[:bsz, :end_pos].unsqueeze(2)  # [b, t, 1, kv_lora_rank]
    x = torch_npu.npu_sparse_flash_attention(
        q_nope, latent, latent, topk_indices.unsqueeze(2).int(), self.softmax_scale,
        query_rope=q_pe, key_rope=self.pe_cache[:bsz, :end_pos].unsqueeze(2),
        layout_query="BSND", layout_kv="BSND", sparse_mode=3, attention_mode=2)[0]
Fix safety
    Needs prerequisites: rows with fewer valid keys than top-k must be padded with -1,
    which the operator skips (the model's indexer pads with masked positions, which the
    causal limit also drops). The operator takes only bfloat16/float16, MLA-absorb mode
    with kv_lora_rank 512 and rope 64, query heads per TP rank a power of two up to 128
    on A2/A3, and the query layouts BSND/TND; the checks evaluate them. A mask built
    from anything other than the indices (a padding or window mask) is not matched.
References
    catalog/attention/npu_sparse_flash_attention.toml; reference_chains.md
    (module-attention-mla-indexer).
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "mla.sparse_flash_attention",
    "title": "absorbed MLA attention over an indexer's top-k keys -> npu_sparse_flash_attention (attention_mode 2)",
    "module": "mla",
    "apis": ["npu_sparse_flash_attention"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "padded_topk_indices",
         "en": "Pass the indexer's positions as int32 [b, s, 1, index_topk]; a row with fewer valid keys than index_topk is padded with -1 (npu_lightning_indexer already returns it so), which the kernel skips.",
         "zh": "以int32的[b, s, 1, index_topk]传入索引器给出的位置；有效key少于index_topk的行用-1补齐（npu_lightning_indexer的返回值已如此），内核会跳过它们。",
         "mechanical": True},
    ],
    "checks": ["npu_sparse_flash_attention:*"],
    "facts": {"mla": True, "layout": "BSND", "sparse_mode": 3, "sparse_block_size": 1},
    "hints": {"class_names": ["MLA", "SparseMLA", "DeepseekV32Attention"]},
    "inputs": {
        "q_latent": {"shape": ["B", "S", "N", "C"], "dtype": "act"},
        "q_rot": {"shape": ["B", "S", "N", "R"], "dtype": "act"},
        "kv_cache": {"shape": ["B + 1", "START + S + 2", "C"], "dtype": "act", "scale": 0.5},
        "pe_cache": {"shape": ["B + 1", "START + S + 2", "R"], "dtype": "act"},
        "topk_indices": {"shape": ["B", "S", "IK"], "dtype": "int64", "init": "causal_topk", "high": "START + S"},
        "mask": {"shape": ["S", "START + S"], "dtype": "act", "init": "causal_additive"},
        "softmax_scale": {"dtype": "param", "expr": "(128 + R) ** -0.5"},
        "end_pos": {"dtype": "param", "expr": "START + S"},
    },
    "sizes": {"B": 2, "S": 4, "N": 4, "C": 512, "R": 64, "START": 3, "IK": 3},
    "dtypes": ["float32", "bfloat16"],
    # the causal-mask add is optional (DeepSeek-V3.2's decode step has none); the index-mask add
    # is spelt index mask first, so skipping an add never skips the index mask itself
    "match": {"optional": ["add"],
              "lookalikes": {"lookalike_dense": "fixtures/sparse_flash_attention_nomatch_dense.py"}},
    "near_misses": [
        {"file": "fixtures/sparse_flash_attention_nomatch_dense.py",
         "reason": "every cached key is scored and kept (no top-k index mask): dense absorbed MLA, see mla.fia_absorb"},
    ],
    "doc_zh": """吸收式MLA限定在索引器top-k个key上的注意力，替换为npu_sparse_flash_attention。

功能
    识别DeepSeek-V3.2的稀疏注意力核心：吸收式MLA得分（折叠后的query与潜在缓存、旋转部分与
    rope key缓存，缩放后）加上一个掩码，该掩码除索引器为每个query选出的key位置外全为负无穷
    （full(-inf).scatter_(-1, topk_indices, 0)），存在因果掩码时再加上因果掩码；随后做float32
    softmax，概率读取潜在缓存作为value。建议改为MLA吸收模式（attention_mode=2）的一次
    torch_npu.npu_sparse_flash_attention：潜在缓存作为key与value（KV头数为1，D为512），旋转部分为
    query_rope/key_rope（D为64），位置作为sparse_indices，sparse_mode=3保留因果限制。
原因
    eager路径对所有已缓存的key打分后只保留top-k个，每层写出[b, s, 头数, t]的得分张量和[b, s, t]
    的掩码。融合内核只收集选中的key，计算量随top-k（2048）而非上下文长度增长。它是参考
    MLA + 索引器链中npu_lightning_indexer之后的注意力步骤。
示例
    index_mask = torch.full((bsz, seqlen, end_pos), float("-inf"), device=x.device).scatter_(-1, topk_indices, 0)
    if mask is not None:
        index_mask += mask
    scores += index_mask.unsqueeze(2)
    scores = scores.softmax(dim=-1, dtype=torch.float32).type_as(x)
    x = torch.einsum("bsht,btc->bshc", scores, self.kv_cache[:bsz, :end_pos])
替代写法
    latent = self.kv_cache[:bsz, :end_pos].unsqueeze(2)  # [b, t, 1, kv_lora_rank]
    x = torch_npu.npu_sparse_flash_attention(
        q_nope, latent, latent, topk_indices.unsqueeze(2).int(), self.softmax_scale,
        query_rope=q_pe, key_rope=self.pe_cache[:bsz, :end_pos].unsqueeze(2),
        layout_query="BSND", layout_kv="BSND", sparse_mode=3, attention_mode=2)[0]
修复安全性
    需要前置改造：有效key少于top-k的行须用-1补齐，算子会跳过它们（模型的索引器用被掩码的位置
    补齐，因果限制同样会去掉这些位置）。算子只接受bfloat16/float16，仅支持kv_lora_rank为512、
    rope为64的MLA吸收模式，A2/A3上每个TP rank的query头数须为不超过128的2的幂，query布局为
    BSND/TND；由检查项评估。由索引以外的信息构造的掩码（padding或窗口掩码）不会被匹配。
参考
    catalog/attention/npu_sparse_flash_attention.toml；reference_chains.md
    （module-attention-mla-indexer）。
""",
}


def search(q_latent, q_rot, kv_cache, pe_cache, topk_indices, mask, softmax_scale, end_pos):
    b, s = q_latent.size(0), q_latent.size(1)
    scores = torch.einsum("bshc,btc->bsht", q_latent, kv_cache[:b, :end_pos])
    scores = scores + torch.einsum("bshr,btr->bsht", q_rot, pe_cache[:b, :end_pos])
    scores = scores * softmax_scale
    index_mask = torch.full((b, s, end_pos), float("-inf"), device=q_latent.device).scatter_(-1, topk_indices, 0.0)
    index_mask = index_mask + mask
    scores = index_mask.unsqueeze(2) + scores
    probs = scores.softmax(dim=-1, dtype=torch.float32).type_as(q_latent)
    return torch.einsum("bsht,btc->bshc", probs, kv_cache[:b, :end_pos])


def lookalike_dense(q_latent, q_rot, kv_cache, pe_cache, topk_indices, mask, softmax_scale, end_pos):
    # no index mask: every cached key is kept
    b = q_latent.size(0)
    scores = torch.einsum("bshc,btc->bsht", q_latent, kv_cache[:b, :end_pos])
    scores = scores + torch.einsum("bshr,btr->bsht", q_rot, pe_cache[:b, :end_pos])
    scores = scores * softmax_scale + mask.unsqueeze(1)
    probs = scores.softmax(dim=-1, dtype=torch.float32).type_as(q_latent)
    return torch.einsum("bsht,btc->bshc", probs, kv_cache[:b, :end_pos])


def replace(q_latent, q_rot, kv_cache, pe_cache, topk_indices, mask, softmax_scale, end_pos):
    b = q_latent.size(0)
    latent = kv_cache[:b, :end_pos].unsqueeze(2)
    return torch_npu.npu_sparse_flash_attention(
        q_latent, latent, latent, topk_indices.unsqueeze(2).int(), softmax_scale, query_rope=q_rot,
        key_rope=pe_cache[:b, :end_pos].unsqueeze(2), layout_query="BSND", layout_kv="BSND", sparse_mode=3,
        attention_mode=2)[0]


def naive_no_causal_limit(q_latent, q_rot, kv_cache, pe_cache, topk_indices, mask, softmax_scale, end_pos):
    # sparse_mode 0 trusts the indices alone: a padded row's later positions are then attended to
    b = q_latent.size(0)
    latent = kv_cache[:b, :end_pos].unsqueeze(2)
    padded = torch.cat((topk_indices, torch.full_like(topk_indices[..., :1], end_pos - 1)), dim=-1)
    return torch_npu.npu_sparse_flash_attention(
        q_latent, latent, latent, padded.unsqueeze(2).int(), softmax_scale, query_rope=q_rot,
        key_rope=pe_cache[:b, :end_pos].unsqueeze(2), layout_query="BSND", layout_kv="BSND", sparse_mode=0,
        attention_mode=2)[0]
