"""A prefill indexer that scales its scores inside the ReLU and mixes the heads with a matmul becomes `npu_lightning_indexer` with `sparse_mode=3`.

What it does
    Finds the DeepSeek-V3.2-style indexer as Hugging Face code writes it: each index
    head scores every key in float32 as `relu(q[h] . k[t] * softmax_scale)`, the heads
    are mixed by a matmul of the token's head weights `[b, s, 1, heads]` with the
    per-head scores `[b, s, heads, t]`, the additive causal mask is added and the
    `index_topk` best keys are kept. Since the scale is positive it moves out of the
    ReLU onto the head weights, and the chain is the one `npu_lightning_indexer`
    computes. It proposes one call with the right-down causal mode (`sparse_mode=3`)
    and the scale folded into the weights.
Why
    The eager form writes a float32 [batch, seq, heads, keys] score tensor over the
    whole prompt (it grows with the square of the prompt length), then the ReLU, the
    head matmul, the mask add and a top-k over every row. The fused kernel streams the
    keys each query may see and keeps only the running top-k. It is the indexer step
    of the reference MLA + indexer chain in prefill.
Example
    scores = torch.matmul(q.float(), k.transpose(-1, -2).float().unsqueeze(1)) * self.softmax_scale
    scores = F.relu(scores)
    index_scores = torch.matmul(weights.unsqueeze(-2), scores).squeeze(-2)
    index_scores = index_scores + attention_mask
    topk_idx = index_scores.topk(topk, dim=-1).indices
Use instead
    topk_idx = torch_npu.npu_lightning_indexer(q, k.unsqueeze(2), weights * self.softmax_scale,
                                               layout_query="BSND", layout_key="BSND",
                                               sparse_count=topk, sparse_mode=3)[0].squeeze(2)
Fix safety
    Needs prerequisites, as indexer.lightning_indexer_causal: the mask must be the plain
    causal one aligned to the bottom right (what `sparse_mode=3` computes; a padding or
    window mask stays in torch), and positions a row cannot fill come back as -1, which
    code that scatters or gathers with them must skip. The key cache the model reads
    through its cache object (`update_indexer`) becomes the operator's key input. The
    eager scores are float32; the kernel takes the model's activation dtype. The
    operator fixes the index head dim at 128, one key head, at most 64 query heads and
    `sparse_count` in [1, 2048] (or a few larger values); the checks evaluate them.
References
    catalog/attention/npu_lightning_indexer.toml; reference_chains.md
    (module-attention-mla-indexer); rules/indexer/lightning_indexer_causal.py.
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "indexer.lightning_indexer_head_matmul",
    "title": "topk(w @ relu(q . k * scale) + causal mask) -> npu_lightning_indexer(w * scale, sparse_mode=3)",
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
        {"id": "indexer_key_cache",
         "en": "Keep the indexer's keys in a buffer of your own ([B, max_len, 128], written in place at each sequence's length) instead of the cache object's update_indexer, and pass it as the operator's key with the valid lengths.",
         "zh": "把索引器的key保存在自己的缓冲区中（[B, max_len, 128]，在每条序列的长度处原地写入），替代缓存对象的update_indexer，并把它连同有效长度作为算子的key传入。",
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
        "softmax_scale": {"dtype": "param", "value": 0.08838834764831845},
        "index_topk": {"dtype": "param", "value": 8},
    },
    "sizes": {"B": 2, "S": 4, "N": 8, "D": 128, "START": 8},
    "dtypes": ["float32"],
    "near_misses": [
        {"file": "fixtures/lightning_indexer_head_matmul_nomatch_softmax_scores.py",
         "reason": "each head's scores go through a softmax over the keys, not a ReLU: the kernel's relu(q . k) mixes other numbers and may pick other keys"},
    ],
    "match": {
        "explain": [
            {"when": "expected relu(...), found softmax(", "near_miss": "fixtures/lightning_indexer_head_matmul_nomatch_softmax_scores.py"},
        ],
    },
    "doc_zh": """在ReLU内缩放得分、用矩阵乘混合各头的预填充索引器，替换为sparse_mode=3的npu_lightning_indexer。

功能
    识别Hugging Face代码写法的DeepSeek-V3.2式索引器：每个索引头在float32中为每个key计算
    relu(q[h] . k[t] * softmax_scale)，各头通过token的头权重[b, s, 1, heads]与逐头得分
    [b, s, heads, t]的矩阵乘相混合，再加上加性因果掩码，保留index_topk个最佳key。缩放为正数，
    可从ReLU内移到头权重上，此时计算链即npu_lightning_indexer的计算。建议改为一次右下因果模式
    （sparse_mode=3）的调用，并把缩放并入权重。
原因
    eager写法在整个提示词上写出float32的[batch, seq, heads, keys]得分张量（随提示词长度平方
    增长），再做ReLU、头矩阵乘、加掩码并对每行做top-k。融合内核只流式读取每个query可见的key，
    只保留滚动的top-k。它是参考MLA + 索引器链在prefill中的索引器步骤。
示例
    scores = torch.matmul(q.float(), k.transpose(-1, -2).float().unsqueeze(1)) * self.softmax_scale
    scores = F.relu(scores)
    index_scores = torch.matmul(weights.unsqueeze(-2), scores).squeeze(-2)
    index_scores = index_scores + attention_mask
    topk_idx = index_scores.topk(topk, dim=-1).indices
替代写法
    topk_idx = torch_npu.npu_lightning_indexer(q, k.unsqueeze(2), weights * self.softmax_scale,
                                               layout_query="BSND", layout_key="BSND",
                                               sparse_count=topk, sparse_mode=3)[0].squeeze(2)
修复安全性
    需要前置改造，与indexer.lightning_indexer_causal相同：掩码须是右下对齐的普通因果掩码
    （sparse_mode=3的计算方式；padding或窗口掩码保留在torch中），某行填不满的位置返回-1，
    用这些位置做scatter或gather的代码须跳过-1。模型经缓存对象（update_indexer）读取的key缓存
    改为算子的key输入。eager得分为float32，内核使用模型的激活数据类型。算子固定索引头维为128、
    一个key头、最多64个query头，sparse_count在[1, 2048]内（或少数更大的值）；检查项逐一评估。
参考
    catalog/attention/npu_lightning_indexer.toml；reference_chains.md
    （module-attention-mla-indexer）；rules/indexer/lightning_indexer_causal.py。
""",
}


def search(q, k, head_weights, mask, softmax_scale, index_topk):
    scores = torch.matmul(q.float(), k.transpose(-1, -2).float().unsqueeze(1)) * softmax_scale
    scores = F.relu(scores)
    index_scores = torch.matmul(head_weights.unsqueeze(-2), scores).squeeze(-2)
    index_scores = index_scores + mask
    return index_scores.topk(index_topk, dim=-1).indices


def replace(q, k, head_weights, mask, softmax_scale, index_topk):
    picked, _ = torch_npu.npu_lightning_indexer(q, k.unsqueeze(2), head_weights * softmax_scale,
                                                layout_query="BSND", layout_key="BSND",
                                                sparse_count=index_topk, sparse_mode=3)
    return picked.squeeze(2).long()


def naive_no_causal_limit(q, k, head_weights, mask, softmax_scale, index_topk):
    # sparse_mode 0 scores every key: later keys get chosen that the mask rules out
    picked, _ = torch_npu.npu_lightning_indexer(q, k.unsqueeze(2), head_weights * softmax_scale,
                                                layout_query="BSND", layout_key="BSND",
                                                sparse_count=index_topk, sparse_mode=0)
    return picked.squeeze(2).long()
