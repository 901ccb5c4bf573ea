"""On a C8 deployment, the indexer's weighted ReLU score and top-k become `npu_dynamic_quant` + `npu_quant_lightning_indexer`.

What it does
    Finds the same chain as indexer.lightning_indexer (per query token, every index
    head scores every cached key as `relu(q[h] . k[t])`, the heads are mixed with the
    token's weights and the `index_topk` best keys are kept), but only when the
    deployment quantises its caches to int8 (`--quant w8a8c8`). It proposes int8
    index queries and keys, each with one scale per token and head
    (`npu_dynamic_quant` along the 128-wide index head dim), and one
    `torch_npu.npu_quant_lightning_indexer` call that dequantises the dot products
    before the ReLU and returns the selected positions.
Why
    With C8 the indexer's key cache is stored in int8, so the unquantised
    `npu_lightning_indexer`, which takes bfloat16/float16 keys only, cannot read it
    (its catalog check `key_cache_not_int8` says so on such a deployment). The int8
    kernel halves the bytes read per cached key, the largest cost of the indexer on
    long contexts. It is the C8 form of the indexer step of the reference MLA +
    indexer chain, before `npu_kv_quant_sparse_flash_attention`.
Example
    logits = torch.einsum("bshd,btd->bsht", q, k_cache)
    scores = (F.relu(logits) * head_weights.unsqueeze(-1)).sum(dim=2)
    topk_idx = scores.topk(index_topk, dim=-1).indices
Use instead
    q_i8, q_scale = torch_npu.npu_dynamic_quant(q)                 # [b, s, h, 128], [b, s, h]
    k_i8, k_scale = torch_npu.npu_dynamic_quant(k_cache.unsqueeze(2))  # kept in the cache: int8 + scale
    topk_idx = torch_npu.npu_quant_lightning_indexer(
        q_i8, k_i8, head_weights.half(), q_scale.half(), k_scale.half(), 0, 0,
        layout_query="BSND", layout_key="BSND", sparse_count=index_topk, sparse_mode=0).squeeze(2)
Fix safety
    Needs prerequisites. The indexer's key cache becomes int8 with a float16 scale
    per token, written where the cache is written (the replacement quantises the
    whole cache at each call only so that it can be checked on its own); that is a
    change to the cache and its writer, not mechanical. Positions past a row's keys
    come back as -1, as with the unquantised indexer. int8 rounding moves each score
    by up to about 1 % of its size, so keys whose scores lie that close may swap in
    the top-k: the accuracy cost of C8, to be judged on the model's own outputs. The
    numeric check runs on inputs int8 represents exactly, which tests the wiring
    (scale axes, head dims, layouts), not that rounding. The operator takes float16
    weights and scales with int8 (A2/A3), index head dim 128, one key head, at most 64
    query heads and `sparse_count` in [1, 2048]; the checks evaluate them.
References
    catalog/attention/npu_quant_lightning_indexer.toml;
    catalog/quant/npu_dynamic_quant.toml; reference_chains.md
    (module-attention-mla-indexer, C8).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "indexer.quant_lightning_indexer",
    "title": "topk(sum_h w_h * relu(q_h . k)) on a C8 deployment -> npu_dynamic_quant + npu_quant_lightning_indexer",
    "module": "indexer",
    "apis": ["npu_dynamic_quant", "npu_quant_lightning_indexer"],
    "stages": ["decode"],
    "safety": "needs_prerequisites",
    "when": "quant == 'w8a8c8'",
    "prerequisites": [
        {"id": "int8_index_key_cache",
         "en": "Store the indexer's key cache as int8 [b, t, 1, 128] plus a float16 scale per token [b, t, 1] (npu_dynamic_quant where the key is written), and pass both to npu_quant_lightning_indexer instead of the bfloat16 cache.",
         "zh": "把索引器的key缓存存为int8 [b, t, 1, 128]，并为每个token存一个float16系数[b, t, 1]（在写入key处调用npu_dynamic_quant），把二者传给npu_quant_lightning_indexer，取代bfloat16缓存。",
         "mechanical": False},
        {"id": "padded_indices",
         "en": "Treat -1 in the returned positions as 'no key' (rows with fewer keys than index_topk) where the indices are scattered into a mask or gathered.",
         "zh": "在用返回位置构造掩码或做gather的地方，把-1视为“无此key”（key数少于index_topk的行）。",
         "mechanical": False},
    ],
    "checks": ["npu_quant_lightning_indexer:*"],
    "facts": {"mla": True, "layout": "BSND", "sparse_mode": 0},
    "hints": {"class_names": ["Indexer", "DeepseekV32Indexer"]},
    "inputs": {
        "q": {"shape": ["B", "S", "N", "D"], "dtype": "act", "init": "int8_grid"},
        "k": {"shape": ["B", "T", "D"], "dtype": "act", "init": "int8_grid", "octaves": 4},
        "head_weights": {"shape": ["B", "S", "N"], "dtype": "act", "init": "int8_grid", "group": "N"},
        "index_topk": {"dtype": "param", "value": 8},
    },
    "sizes": {"B": 2, "S": 1, "N": 8, "D": 128, "T": 24},
    "dtypes": ["float32"],
    "near_misses": [
        {"file": "fixtures/quant_lightning_indexer_nomatch_gelu_scores.py",
         "reason": "the head scores go through GELU, not ReLU: not the indexer score the operator computes"},
    ],
    "match": {
        "explain": [
            {"when": "expected relu(...), found gelu(", "near_miss": "fixtures/quant_lightning_indexer_nomatch_gelu_scores.py"},
        ],
    },
    "doc_zh": """C8部署下，索引器的加权ReLU得分及其top-k，替换为npu_dynamic_quant + npu_quant_lightning_indexer。

功能
    识别与indexer.lightning_indexer相同的链（对每个query token，每个索引头对每个已缓存的key
    打分relu(q[h] . k[t])，用该token的权重混合各头，保留index_topk个最好的key），但只在部署把
    缓存量化为int8时（--quant w8a8c8）考虑。建议把索引query与key量化为int8，每个token、每个头
    一个系数（沿128宽的索引头维调用npu_dynamic_quant），再用一次
    torch_npu.npu_quant_lightning_indexer：它在ReLU前对点积反量化，并返回选中的位置。
原因
    C8时索引器的key缓存以int8存放，只接受bfloat16/float16 key的非量化npu_lightning_indexer无法
    读取它（此类部署下其目录检查key_cache_not_int8会指出）。int8内核使每个已缓存key读取的字节
    减半，而这正是长上下文下索引器的最大开销。它是参考MLA + 索引器链中索引器步骤的C8形式，位于
    npu_kv_quant_sparse_flash_attention之前。
示例
    logits = torch.einsum("bshd,btd->bsht", q, k_cache)
    scores = (F.relu(logits) * head_weights.unsqueeze(-1)).sum(dim=2)
    topk_idx = scores.topk(index_topk, dim=-1).indices
替代写法
    q_i8, q_scale = torch_npu.npu_dynamic_quant(q)                 # [b, s, h, 128], [b, s, h]
    k_i8, k_scale = torch_npu.npu_dynamic_quant(k_cache.unsqueeze(2))  # 存入缓存：int8 + 系数
    topk_idx = torch_npu.npu_quant_lightning_indexer(
        q_i8, k_i8, head_weights.half(), q_scale.half(), k_scale.half(), 0, 0,
        layout_query="BSND", layout_key="BSND", sparse_count=index_topk, sparse_mode=0).squeeze(2)
修复安全性
    需要前置改造。索引器的key缓存改为int8，并在写缓存处为每个token存一个float16系数（替代写法
    每次调用时量化整个缓存，只是为了能单独校验）；这是对缓存及其写入方的改动，不是机械改造。
    与非量化索引器相同，超出某行key数的位置返回-1。int8舍入会使每个得分变化至多约1%，得分如此
    接近的key在top-k中可能互换：这是C8的精度代价，须在模型自身的输出上评判。数值校验使用int8
    可精确表示的输入，校验的是接线（系数轴、头维、布局），而不是舍入。int8时（A2/A3）算子要求
    float16的权重与系数、索引头维128、一个key头、query头数不超过64、sparse_count在[1, 2048]内；
    由检查项评估。
参考
    catalog/attention/npu_quant_lightning_indexer.toml；
    catalog/quant/npu_dynamic_quant.toml；reference_chains.md
    （module-attention-mla-indexer，C8）。
""",
}


def search(q, k, head_weights, index_topk):
    logits = torch.einsum("bshd,btd->bsht", q, k)
    scores = (F.relu(logits) * head_weights.unsqueeze(-1)).sum(dim=2)
    return scores.topk(index_topk, dim=-1).indices


def search_matmul(q, k, head_weights, index_topk):
    logits = torch.matmul(q, k.unsqueeze(1).transpose(-1, -2))
    scores = (torch.relu(logits) * head_weights.unsqueeze(-1)).sum(dim=2)
    return torch.topk(scores, index_topk, dim=-1)[1]


def replace(q, k, head_weights, index_topk):
    q_i8, q_scale = torch_npu.npu_dynamic_quant(q)
    k_i8, k_scale = torch_npu.npu_dynamic_quant(k.unsqueeze(2))
    picked = torch_npu.npu_quant_lightning_indexer(q_i8, k_i8, head_weights.half(), q_scale.half(), k_scale.half(),
                                                   0, 0, layout_query="BSND", layout_key="BSND",
                                                   sparse_count=index_topk, sparse_mode=0)
    return picked.squeeze(2).long()


def naive_per_tensor_key_scale(q, k, head_weights, index_topk):
    # one scale for the whole key cache instead of one per token: keys with a smaller
    # peak lose their scale, and the scores of every other key are off
    q_i8, q_scale = torch_npu.npu_dynamic_quant(q)
    k_i8, k_scale = torch_npu.npu_dynamic_quant(k.unsqueeze(2))
    flat = k_scale.amax().expand(k_scale.shape)
    picked = torch_npu.npu_quant_lightning_indexer(q_i8, k_i8, head_weights.half(), q_scale.half(), flat.half(),
                                                   0, 0, layout_query="BSND", layout_key="BSND",
                                                   sparse_count=index_topk, sparse_mode=0)
    return picked.squeeze(2).long()
