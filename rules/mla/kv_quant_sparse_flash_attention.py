"""On a C8 deployment, absorbed MLA attention over an indexer's top-k keys becomes `npu_kv_quant_sparse_flash_attention`.

What it does
    Finds the same sparse attention core as mla.sparse_flash_attention (absorbed-MLA
    scores against the latent and rope-key caches, a minus-infinity mask except at
    the indexer's top-k positions, a float32 softmax, the latent cache as values),
    but only when the deployment keeps its KV cache in int8 (`--quant w8a8c8`). It
    proposes one `torch_npu.npu_kv_quant_sparse_flash_attention` over C8 cache rows:
    per token 656 bytes, the 512-wide latent in int8 with one float32 scale per
    128-wide tile and the 64 rope values in the activation dtype. The query is
    `cat(q_nope, q_rope)` (D 576), the mode is MLA-absorb with per-tile dequantisation
    (`key_quant_mode = value_quant_mode = 2`) and `sparse_mode=3`.
Why
    With C8 the latent cache holds int8 rows, which the unquantised
    `npu_sparse_flash_attention` cannot read (its catalog check `kv_cache_not_int8`
    says so on such a deployment). Each selected key then costs 656 bytes instead of
    1152 in bfloat16, and the kernel gathers only the top-k rows. It is the C8
    attention step of the reference MLA + indexer chain, after
    `npu_quant_lightning_indexer`.
Example
    index_mask = torch.full((bsz, seqlen, end_pos), float("-inf"), device=x.device).scatter_(-1, topk_indices, 0)
    scores += index_mask.unsqueeze(2)
    scores = scores.softmax(dim=-1, dtype=torch.float32).type_as(x)
    x = torch.einsum("bsht,btc->bshc", scores, self.kv_cache[:bsz, :end_pos])
Use instead
    rows = self.c8_cache[:bsz, :end_pos]  # [b, t, 1, 656] int8, written with the prolog's C8 output
    x = torch_npu.npu_kv_quant_sparse_flash_attention(
        torch.cat((q_nope, q_pe), dim=-1), rows, rows, topk_indices.unsqueeze(2).int(), self.softmax_scale,
        2, 2, layout_query="BSND", layout_kv="BSND", sparse_mode=3, attention_mode=2)
Fix safety
    Needs prerequisites. The latent and rope-key caches become one cache of C8 rows,
    written per token where the caches are written now (npu_mla_prolog_v3 with
    `kv_cache_quant_mode=3, tile_size=128` writes them, or npu_dynamic_quant over
    each 128-wide tile); every other reader of the latent cache must dequantise.
    That is a change of the cache and its writer, not mechanical. The replacement
    builds the rows from the two caches at each call only so that it can be checked
    on its own. int8 rounding of the latent moves each value by up to half a step
    of its tile: the accuracy cost of C8, to be judged on the model's own outputs.
    The numeric check runs on latents int8 represents exactly, which tests the
    wiring (tile order, row layout, query concatenation), not that rounding. The
    operator takes bfloat16/float16 queries only, kv_lora_rank 512, rope 64, query
    heads per TP rank a power of two up to 128 and the query layouts BSND/TND; the
    checks evaluate them.
References
    catalog/attention/npu_kv_quant_sparse_flash_attention.toml;
    catalog/mla/npu_mla_prolog_v3.toml; reference_chains.md
    (module-attention-mla-indexer, C8).
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "mla.kv_quant_sparse_flash_attention",
    "title": "absorbed MLA attention over an indexer's top-k keys on a C8 deployment -> npu_kv_quant_sparse_flash_attention",
    "module": "mla",
    "apis": ["npu_kv_quant_sparse_flash_attention"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "when": "quant == 'w8a8c8'",
    "prerequisites": [
        {"id": "c8_latent_cache",
         "en": "Keep the latent and rope-key caches as one cache of C8 rows [b, t, 1, 656] (int8 latent per 128-wide tile, the rope key in the activation dtype, four float32 tile scales), written where the caches are written (npu_mla_prolog_v3 with kv_cache_quant_mode=3 and tile_size=128, or npu_dynamic_quant per tile); other readers of the latent dequantise it.",
         "zh": "把潜在缓存与rope key缓存合并为一份C8行缓存[b, t, 1, 656]（按128宽分块量化的int8潜在向量、激活类型的rope key、4个float32分块系数），在原写缓存处写入（npu_mla_prolog_v3取kv_cache_quant_mode=3、tile_size=128，或按分块调用npu_dynamic_quant）；潜在缓存的其他读者须先反量化。",
         "mechanical": False},
        {"id": "padded_topk_indices",
         "en": "Pass the indexer's positions as int32 [b, s, 1, index_topk]; a row with fewer valid keys than index_topk is padded with -1 (the quantised indexer already returns it so), which the kernel skips.",
         "zh": "以int32的[b, s, 1, index_topk]传入索引器给出的位置；有效key少于index_topk的行用-1补齐（量化索引器的返回值已如此），内核会跳过它们。",
         "mechanical": True},
    ],
    "checks": ["npu_kv_quant_sparse_flash_attention:*"],
    "facts": {"mla": True, "layout": "BSND", "sparse_mode": 3, "sparse_block_size": 1, "kv_cache_quant_mode": 3},
    "hints": {"class_names": ["MLA", "SparseMLA", "DeepseekV32Attention"]},
    "inputs": {
        "q_latent": {"shape": ["B", "S", "N", "C"], "dtype": "act"},
        "q_rot": {"shape": ["B", "S", "N", "R"], "dtype": "act"},
        "kv_cache": {"shape": ["B + 1", "START + S + 2", "C"], "dtype": "act", "init": "int8_grid", "group": 128,
                     "octaves": 3},
        "pe_cache": {"shape": ["B + 1", "START + S + 2", "R"], "dtype": "act"},
        "topk_indices": {"shape": ["B", "S", "IK"], "dtype": "int64", "init": "causal_topk", "high": "START + S"},
        "mask": {"shape": ["S", "START + S"], "dtype": "act", "init": "causal_additive"},
        "softmax_scale": {"dtype": "param", "expr": "(128 + R) ** -0.5"},
        "end_pos": {"dtype": "param", "expr": "START + S"},
    },
    "sizes": {"B": 2, "S": 4, "N": 4, "C": 512, "R": 64, "START": 3, "IK": 3},
    "dtypes": ["bfloat16"],
    "match": {"optional": ["add"],
              "lookalikes": {"lookalike_dense": "fixtures/kv_quant_sparse_flash_attention_nomatch_dense.py"}},
    "near_misses": [
        {"file": "fixtures/kv_quant_sparse_flash_attention_nomatch_dense.py",
         "reason": "every cached key is scored and kept (no top-k index mask): dense absorbed MLA, see mla.fia_absorb"},
    ],
    "doc_zh": """C8部署下，吸收式MLA限定在索引器top-k个key上的注意力，替换为npu_kv_quant_sparse_flash_attention。

功能
    识别与mla.sparse_flash_attention相同的稀疏注意力核心（吸收式MLA对潜在缓存与rope key缓存的
    得分、除索引器top-k位置外全为负无穷的掩码、float32 softmax、以潜在缓存为value），但只在部署
    把KV缓存存为int8时（--quant w8a8c8）考虑。建议改为一次基于C8缓存行的
    torch_npu.npu_kv_quant_sparse_flash_attention：每个token 656字节，512宽的潜在向量为int8、每
    128宽分块一个float32系数，64个rope值为激活类型。query为cat(q_nope, q_rope)（D 576），采用
    按分块反量化的MLA吸收模式（key_quant_mode = value_quant_mode = 2），sparse_mode=3。
原因
    C8时潜在缓存存放int8行，非量化的npu_sparse_flash_attention无法读取（此类部署下其目录检查
    kv_cache_not_int8会指出）。每个选中的key只需656字节，而bfloat16需1152字节，且内核只收集
    top-k行。它是参考MLA + 索引器链在C8下的注意力步骤，位于npu_quant_lightning_indexer之后。
示例
    index_mask = torch.full((bsz, seqlen, end_pos), float("-inf"), device=x.device).scatter_(-1, topk_indices, 0)
    scores += index_mask.unsqueeze(2)
    scores = scores.softmax(dim=-1, dtype=torch.float32).type_as(x)
    x = torch.einsum("bsht,btc->bshc", scores, self.kv_cache[:bsz, :end_pos])
替代写法
    rows = self.c8_cache[:bsz, :end_pos]  # [b, t, 1, 656] int8，由prolog的C8输出写入
    x = torch_npu.npu_kv_quant_sparse_flash_attention(
        torch.cat((q_nope, q_pe), dim=-1), rows, rows, topk_indices.unsqueeze(2).int(), self.softmax_scale,
        2, 2, layout_query="BSND", layout_kv="BSND", sparse_mode=3, attention_mode=2)
修复安全性
    需要前置改造。潜在缓存与rope key缓存合并为一份C8行缓存，在原写缓存处按token写入
    （npu_mla_prolog_v3取kv_cache_quant_mode=3、tile_size=128时写出，或对每个128宽分块调用
    npu_dynamic_quant）；潜在缓存的其他读者须反量化。这是对缓存及其写入方的改动，不是机械改造。
    替代写法每次调用时由两份缓存拼出C8行，只是为了能单独校验。潜在向量的int8舍入使每个值变化
    至多其分块步长的一半：这是C8的精度代价，须在模型自身的输出上评判。数值校验使用int8可精确
    表示的潜在向量，校验的是接线（分块顺序、行布局、query拼接），而不是舍入。算子只接受
    bfloat16/float16的query、kv_lora_rank 512、rope 64、每个TP rank的query头数为不超过128的2的幂、
    query布局BSND/TND；由检查项评估。
参考
    catalog/attention/npu_kv_quant_sparse_flash_attention.toml；
    catalog/mla/npu_mla_prolog_v3.toml；reference_chains.md
    （module-attention-mla-indexer，C8）。
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
    latent = kv_cache[:b, :end_pos]
    tiles_i8, tile_scales = torch_npu.npu_dynamic_quant(latent.reshape(b, end_pos, 4, 128))
    rows = torch.cat((tiles_i8.reshape(b, end_pos, 512), pe_cache[:b, :end_pos].contiguous().view(torch.int8),
                      tile_scales.contiguous().view(torch.int8)), dim=-1).unsqueeze(2)
    return torch_npu.npu_kv_quant_sparse_flash_attention(
        torch.cat((q_latent, q_rot), dim=-1), rows, rows, topk_indices.unsqueeze(2).int(), softmax_scale, 2, 2,
        layout_query="BSND", layout_kv="BSND", sparse_mode=3, attention_mode=2)


def naive_tiles_swapped(q_latent, q_rot, kv_cache, pe_cache, topk_indices, mask, softmax_scale, end_pos):
    # the tile scales stored in reverse order: each 128-wide tile is dequantised with another tile's scale
    b = q_latent.size(0)
    latent = kv_cache[:b, :end_pos]
    tiles_i8, tile_scales = torch_npu.npu_dynamic_quant(latent.reshape(b, end_pos, 4, 128))
    rows = torch.cat((tiles_i8.reshape(b, end_pos, 512), pe_cache[:b, :end_pos].contiguous().view(torch.int8),
                      tile_scales.flip(-1).contiguous().view(torch.int8)), dim=-1).unsqueeze(2)
    return torch_npu.npu_kv_quant_sparse_flash_attention(
        torch.cat((q_latent, q_rot), dim=-1), rows, rows, topk_indices.unsqueeze(2).int(), softmax_scale, 2, 2,
        layout_query="BSND", layout_kv="BSND", sparse_mode=3, attention_mode=2)
