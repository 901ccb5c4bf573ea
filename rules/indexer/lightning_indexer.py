"""DeepSeek-V3.2 indexer score (weighted ReLU of per-head q.k) and its top-k become `npu_lightning_indexer`.

What it does
    Finds the sparse-attention indexer's selection: per query token, every index head h
    scores every cached key t as `relu(q[h] . k[t])`, the heads are mixed with the
    token's per-head weights, and the `index_topk` best keys are kept
    (`topk(sum_h w[h] * relu(q[h] . k[t]))`). It proposes one
    `torch_npu.npu_lightning_indexer` call that returns the selected positions directly
    (`sparse_count = index_topk`, one key head, BSND layouts).
Why
    The unfused form materialises a [batch, seq, heads, keys] score tensor, a ReLU, a
    weighted head sum and a top-k over the whole context every step; for long contexts
    that tensor is the largest intermediate of the layer. The fused operator streams
    the keys and keeps only the running top-k. Its output feeds
    `npu_sparse_flash_attention` in the reference MLA + indexer chain.
Example
    logits = torch.einsum("bshd,btd->bsht", q, k_cache)
    scores = (F.relu(logits) * head_weights.unsqueeze(-1)).sum(dim=2)
    topk_idx = scores.topk(index_topk, dim=-1).indices
Use instead
    topk_idx = torch_npu.npu_lightning_indexer(q, k_cache.unsqueeze(2), head_weights,
                                               layout_query="BSND", layout_key="BSND",
                                               sparse_count=index_topk, sparse_mode=0)[0].squeeze(2)
Fix safety
    Needs prerequisites. The operator fixes the index head dim at 128, one key head and
    at most 64 query heads, and `sparse_count` to [1, 2048] (or a few larger values);
    the checks evaluate them. Positions past a row's keys come back as -1, not as the
    arbitrary indices a plain top-k returns when `index_topk` exceeds the context:
    code that scatters with them must skip -1 (the prerequisite). This pattern has no
    additive mask, which is the decode case; a prefill indexer that adds a causal mask
    before the top-k maps to `sparse_mode=3` and is not matched by this rule. The
    quantised indexer (fp8/int8 q and k with scales) is `npu_quant_lightning_indexer`.
References
    catalog/attention/npu_lightning_indexer.toml; reference_chains.md
    (module-attention-mla-indexer).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "indexer.lightning_indexer",
    "title": "topk(sum_h w_h * relu(q_h . k)) -> npu_lightning_indexer",
    "module": "indexer",
    "apis": ["npu_lightning_indexer"],
    "stages": ["decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "padded_indices",
         "en": "Treat -1 in the returned positions as 'no key' (rows with fewer keys than index_topk) where the indices are scattered into a mask or gathered.",
         "zh": "在用返回位置构造掩码或做gather的地方，把-1视为“无此key”（key数少于index_topk的行）。",
         "mechanical": False},
    ],
    "checks": ["npu_lightning_indexer:*"],
    "facts": {"mla": True},
    "hints": {"class_names": ["Indexer", "DeepseekV32Indexer"]},
    "inputs": {
        "q": {"shape": ["B", "S", "N", "D"], "dtype": "act"},
        "k": {"shape": ["B", "T", "D"], "dtype": "act"},
        "head_weights": {"shape": ["B", "S", "N"], "dtype": "act"},
        "index_topk": {"dtype": "param", "value": 8},
    },
    "sizes": {"B": 2, "S": 1, "N": 4, "D": 128, "T": 24},
    "dtypes": ["float32"],
    "near_misses": [
        {"file": "fixtures/lightning_indexer_nomatch_softmax_scores.py",
         "reason": "the head scores go through softmax, not ReLU: an attention probability, not the indexer's weighted ReLU score"},
    ],
    "match": {
        "explain": [
            {"when": "expected relu(...), found softmax(", "near_miss": "fixtures/lightning_indexer_nomatch_softmax_scores.py"},
        ],
    },
    "doc_zh": """DeepSeek-V3.2索引器的得分（按头q.k的加权ReLU）及其top-k，替换为npu_lightning_indexer。

功能
    识别稀疏注意力索引器的选择步骤：对每个query token，每个索引头h对每个已缓存的key t打分
    relu(q[h] . k[t])，再用该token的按头权重对各头加权求和，保留index_topk个得分最高的key
    （topk(sum_h w[h] * relu(q[h] . k[t]))）。建议改为一次torch_npu.npu_lightning_indexer调用，
    直接返回选中的位置（sparse_count = index_topk，一个key头，BSND布局）。
原因
    未融合的写法每步都要物化[batch, seq, heads, keys]的得分张量、做ReLU、按头加权求和并在整个
    上下文上取top-k；长上下文时该张量是本层最大的中间结果。融合算子流式读取key，只保留当前的
    top-k。其输出在参考的MLA + 索引器链中交给npu_sparse_flash_attention。
示例
    logits = torch.einsum("bshd,btd->bsht", q, k_cache)
    scores = (F.relu(logits) * head_weights.unsqueeze(-1)).sum(dim=2)
    topk_idx = scores.topk(index_topk, dim=-1).indices
替代写法
    topk_idx = torch_npu.npu_lightning_indexer(q, k_cache.unsqueeze(2), head_weights,
                                               layout_query="BSND", layout_key="BSND",
                                               sparse_count=index_topk, sparse_mode=0)[0].squeeze(2)
修复安全性
    需要前置改造。算子固定索引头维为128、key头数为1、query头数不超过64，sparse_count在
    [1, 2048]内（或少数更大的取值），由检查项评估。某行key数少于index_topk时，多出的位置返回-1，
    而不是普通top-k在index_topk超过上下文长度时给出的任意索引：用这些位置做scatter的代码必须
    跳过-1（即前置改造）。本模式不含加性掩码，对应解码；预填充中在top-k前加因果掩码的索引器对应
    sparse_mode=3，不由本规则匹配。量化索引器（带scale的fp8/int8 q和k）对应
    npu_quant_lightning_indexer。
参考
    catalog/attention/npu_lightning_indexer.toml；reference_chains.md
    （module-attention-mla-indexer）。
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
    picked, _ = torch_npu.npu_lightning_indexer(q, k.unsqueeze(2), head_weights, layout_query="BSND",
                                                layout_key="BSND", sparse_count=index_topk, sparse_mode=0)
    return picked.squeeze(2).long()

