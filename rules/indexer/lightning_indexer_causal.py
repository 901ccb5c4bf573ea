"""A prefill indexer that adds the causal mask before its top-k becomes `npu_lightning_indexer` with `sparse_mode=3`.

What it does
    Finds the DeepSeek-V3.2 indexer as it runs over a whole prompt: every index head
    scores every key as `relu(q[h] . k[t])`, the heads are mixed with the token's
    weights, the additive causal mask (minus infinity after the query's own position)
    is added, and the `index_topk` best keys are kept. It proposes one
    `torch_npu.npu_lightning_indexer` call with the right-down causal mode
    (`sparse_mode=3`), which skips the keys after each query instead of scoring them,
    and returns the selected positions.
Why
    In prefill the eager form materialises a [batch, seq, heads, keys] score tensor
    over the whole prompt, plus the mask add and a top-k over every row; that tensor
    grows with the square of the prompt length. The fused kernel streams the keys a
    query may see and keeps only the running top-k. It is the indexer step of the
    reference MLA + indexer chain in prefill (decode has no mask: see
    indexer.lightning_indexer).
Example
    logits = torch.einsum("bshd,btd->bsht", q, k_cache)
    index_scores = (F.relu(logits) * head_weights.unsqueeze(-1)).sum(dim=2)
    index_scores = index_scores + mask
    topk_idx = index_scores.topk(index_topk, dim=-1).indices
Use instead
    topk_idx = torch_npu.npu_lightning_indexer(q, k_cache.unsqueeze(2), head_weights,
                                               layout_query="BSND", layout_key="BSND",
                                               sparse_count=index_topk, sparse_mode=3)[0].squeeze(2)
Fix safety
    Needs prerequisites. The mask must be the causal one aligned to the bottom right
    (query i of S sees the keys up to T - S + i), which is what `sparse_mode=3` computes;
    a padding or window mask is not that and must stay in torch. A row that sees
    fewer keys than `index_topk` (the first tokens of a prompt) gets -1 for the missing
    positions, where the eager top-k returns masked positions: code that scatters or
    gathers with the positions must skip -1 (npu_sparse_flash_attention does; its
    causal mode also drops the masked positions the eager form picks). The operator
    fixes the index head dim at 128, one key head, at most 64 query heads and
    `sparse_count` in [1, 2048] (or a few larger values); the checks evaluate them.
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
    "id": "indexer.lightning_indexer_causal",
    "title": "topk(sum_h w_h * relu(q_h . k) + causal mask) -> npu_lightning_indexer(sparse_mode=3)",
    "module": "indexer",
    "apis": ["npu_lightning_indexer"],
    "stages": ["prefill"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "causal_mask_only",
         "en": "Check that the mask added before the top-k is the plain causal mask aligned to the bottom right (what sparse_mode=3 computes); a padding or sliding-window mask needs other lengths or stays in torch.",
         "zh": "确认top-k前所加的掩码就是右下对齐的普通因果掩码（sparse_mode=3的计算方式）；padding或滑动窗口掩码需要另给长度，或保留在torch中。",
         "mechanical": False},
        {"id": "padded_indices",
         "en": "Treat -1 in the returned positions as 'no key' (the first tokens of a prompt see fewer keys than index_topk) where the indices are scattered into a mask or gathered.",
         "zh": "在用返回位置构造掩码或做gather的地方，把-1视为“无此key”（提示词开头的token可见的key少于index_topk）。",
         "mechanical": False},
    ],
    "checks": ["npu_lightning_indexer:*"],
    "facts": {"mla": True, "layout": "BSND", "sparse_mode": 3},
    "hints": {"class_names": ["Indexer", "DeepseekV32Indexer"]},
    "inputs": {
        "q": {"shape": ["B", "S", "N", "D"], "dtype": "act"},
        "k": {"shape": ["B", "START + S", "D"], "dtype": "act"},
        "head_weights": {"shape": ["B", "S", "N"], "dtype": "act"},
        "mask": {"shape": ["S", "START + S"], "dtype": "act", "init": "causal_additive"},
        "index_topk": {"dtype": "param", "value": 8},
    },
    # every row sees at least index_topk keys (START + 1 >= 8): there the eager top-k and
    # the operator choose the same positions; fewer keys is the -1 prerequisite. Eight
    # heads keep keys whose every head score is cut by the ReLU (ties at 0) rare.
    "sizes": {"B": 2, "S": 4, "N": 8, "D": 128, "START": 8},
    "dtypes": ["float32"],
    "near_misses": [
        {"file": "fixtures/lightning_indexer_causal_nomatch_mask_before_relu.py",
         "reason": "the mask is added to each head's logits before the ReLU, which turns a masked key's score into 0 instead of minus infinity: not the causal limit sparse_mode=3 applies"},
    ],
    "match": {
        "explain": [
            {"when": "expected einsum(...), found add(", "near_miss": "fixtures/lightning_indexer_causal_nomatch_mask_before_relu.py"},
            {"when": "expected matmul(...), found add(", "near_miss": "fixtures/lightning_indexer_causal_nomatch_mask_before_relu.py"},
        ],
    },
    "doc_zh": """在top-k前加因果掩码的预填充索引器，替换为sparse_mode=3的npu_lightning_indexer。

功能
    识别DeepSeek-V3.2索引器在整段提示词上的运行形式：每个索引头对每个key打分relu(q[h] . k[t])，
    用该token的权重混合各头，加上加性因果掩码（query自身位置之后为负无穷），保留index_topk个
    最好的key。建议改为一次右下角因果模式（sparse_mode=3）的torch_npu.npu_lightning_indexer调用：
    它跳过每个query之后的key而不是为其打分，并返回选中的位置。
原因
    预填充时eager写法要在整段提示词上物化[batch, seq, heads, keys]的得分张量，再加掩码并对每行
    取top-k；该张量随提示词长度平方增长。融合内核流式读取query可见的key，只保留当前的top-k。
    它是参考MLA + 索引器链在预填充中的索引器步骤（解码没有掩码：见indexer.lightning_indexer）。
示例
    logits = torch.einsum("bshd,btd->bsht", q, k_cache)
    index_scores = (F.relu(logits) * head_weights.unsqueeze(-1)).sum(dim=2)
    index_scores = index_scores + mask
    topk_idx = index_scores.topk(index_topk, dim=-1).indices
替代写法
    topk_idx = torch_npu.npu_lightning_indexer(q, k_cache.unsqueeze(2), head_weights,
                                               layout_query="BSND", layout_key="BSND",
                                               sparse_count=index_topk, sparse_mode=3)[0].squeeze(2)
修复安全性
    需要前置改造。掩码必须是右下对齐的因果掩码（S个query中的第i个可见T - S + i及之前的key），
    这正是sparse_mode=3的计算；padding或窗口掩码不属于此类，须保留在torch中。可见key少于
    index_topk的行（提示词开头的token）在缺少的位置得到-1，而eager的top-k会返回被掩码的位置：
    用这些位置做scatter或gather的代码须跳过-1（npu_sparse_flash_attention会跳过；其因果模式也会
    丢弃eager写法选中的被掩码位置）。算子固定索引头维为128、key头数为1、query头数不超过64，
    sparse_count在[1, 2048]内（或少数更大的取值）；由检查项评估。
参考
    catalog/attention/npu_lightning_indexer.toml；reference_chains.md
    （module-attention-mla-indexer）。
""",
}


def search(q, k, head_weights, mask, index_topk):
    logits = torch.einsum("bshd,btd->bsht", q, k)
    scores = (F.relu(logits) * head_weights.unsqueeze(-1)).sum(dim=2)
    scores = scores + mask
    return scores.topk(index_topk, dim=-1).indices


def search_matmul(q, k, head_weights, mask, index_topk):
    logits = torch.matmul(q, k.unsqueeze(1).transpose(-1, -2))
    scores = (torch.relu(logits) * head_weights.unsqueeze(-1)).sum(dim=2)
    scores = scores + mask
    return torch.topk(scores, index_topk, dim=-1)[1]


def replace(q, k, head_weights, mask, index_topk):
    picked, _ = torch_npu.npu_lightning_indexer(q, k.unsqueeze(2), head_weights, layout_query="BSND",
                                                layout_key="BSND", sparse_count=index_topk, sparse_mode=3)
    return picked.squeeze(2).long()


def naive_no_causal_limit(q, k, head_weights, mask, index_topk):
    # sparse_mode 0 scores every key: later keys get chosen that the mask rules out
    picked, _ = torch_npu.npu_lightning_indexer(q, k.unsqueeze(2), head_weights, layout_query="BSND",
                                                layout_key="BSND", sparse_count=index_topk, sparse_mode=0)
    return picked.squeeze(2).long()
