"""Gated delta rule over a prompt (Gated DeltaNet prefill) becomes `npu_chunk_gated_delta_rule`.

What it does
    Finds the gated delta rule written as a loop over tokens in torch (q and k
    L2-normalised over the head dimension, q scaled by Dk ** -0.5; per token the state
    [B, H, Dk, Dv] decays by exp(g_t), takes beta_t times what v_t adds beyond the
    state's own prediction for k_t, and is read with q_t), run over a whole prompt, and
    proposes `torch_npu.npu_chunk_gated_delta_rule`: the chunk-parallel form of the same
    recurrence over packed sequences (TND), returning every token's output and each
    sequence's final state [B, Nv, Dv, Dk].
Why
    A token loop over a prompt launches about ten small kernels per token and rewrites
    the whole state for each. The chunked operator turns most of the work into matrix
    products over blocks of tokens, in one kernel.
Example
    query = l2norm(query); key = l2norm(key)
    query = query * query.shape[-1] ** -0.5
    for i in range(seq_len):
        state = state * g[:, :, i].exp()[..., None, None]
        kv_mem = (state * key[:, :, i].unsqueeze(-1)).sum(dim=-2)
        delta = (value[:, :, i] - kv_mem) * beta[:, :, i].unsqueeze(-1)
        state = state + key[:, :, i].unsqueeze(-1) * delta.unsqueeze(-2)
        out[:, :, i] = (state * query[:, :, i].unsqueeze(-1)).sum(dim=-2)
Use instead
    # q, k, v: [T, N, D] packed tokens; state0: [B, Nv, Dv, Dk] bfloat16
    q, k = l2norm(q), l2norm(k)   # the operator does not normalise
    out, final_state = torch_npu.npu_chunk_gated_delta_rule(
        q, k, v, beta=beta, initial_state=state0, actual_seq_lengths=seq_lens,
        scale=dk ** -0.5, g=g)
Fix safety
    Needs prerequisites. The operator does not L2-normalise q and k: the model's
    `use_qk_l2norm_in_kernel=True` becomes an explicit l2norm in front of the call (the
    replacement does it; see naive_no_l2norm). beta is passed after the model's sigmoid,
    g as the log decay (float32), not exp(g) (naive_decay_not_log). Refactors by hand:
    the inputs go from [B, S, H, D] to packed [T, H, D] with per-sequence lengths; the
    initial and final states are bfloat16 and laid out [B, Nv, Dv, Dk], value axis
    first, where HF and FLA keep [.., Dk, Dv]: with Dk = Dv = 128 a state handed over
    untransposed passes every shape check and gives wrong numbers
    (naive_state_not_transposed). The numeric check passes q and k with as many heads as
    v (what the model's repeat_interleave gives); passing Nk heads saves the repeat, but
    the documentation does not say which value heads share a key head: validate that on
    the device first. The actual_seq_lengths example of the documentation passes
    cumulative offsets where the text asks for lengths: check the installed release.
    Checked: Nk, Nv <= 64, Nv a multiple of Nk, Dk = Dv = 128, bfloat16, A2/A3.
    HF's prefill fallback (torch_chunk_gated_delta_rule) spells the recurrence chunk by
    chunk, padding and reshaping in comprehensions and solving a triangular system per
    chunk; that spelling is not this pattern, so such a model's prefill recurrence stays
    a step without a rule (its decode helper's token loop is
    attention.gated_delta_rule_recurrent; a match of this rule in a decode-only branch is
    dropped).
References
    catalog/attention/npu_chunk_gated_delta_rule.toml (formula, TND, state layout,
    pitfalls); Yang et al., Gated Delta Networks (arXiv 2412.06464).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "attention.gated_delta_rule_chunk",
    "title": "gated delta rule over a prompt (Gated DeltaNet prefill) -> npu_chunk_gated_delta_rule",
    "module": "attention",
    "apis": ["npu_chunk_gated_delta_rule"],
    "stages": ["prefill"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "pack_tokens_tnd",
         "en": "Hand the operator packed tokens: q, k, v as [T, N, D], beta and g as [T, Nv] (g float32), with each sequence's length in actual_seq_lengths, instead of the model's [B, S, H, D].",
         "zh": "以打包的token形式传入：q、k、v为[T, N, D]，beta与g为[T, Nv]（g为float32），各序列长度放入actual_seq_lengths，而不是模型的[B, S, H, D]。",
         "mechanical": False},
        {"id": "state_vk_bf16",
         "en": "Keep the initial and final recurrent states as bfloat16 [B, Nv, Dv, Dk] (value axis before key axis): transpose the last two axes of HF/FLA's [.., Dk, Dv] states wherever the cache hands them over; with Dk = Dv = 128 shapes do not catch a missed transpose.",
         "zh": "初始与最终递推状态保存为bfloat16的[B, Nv, Dv, Dk]（value维在key维之前）：凡与缓存交接处都要交换HF/FLA的[.., Dk, Dv]状态的最后两维；Dk = Dv = 128时形状检查发现不了漏掉的转置。",
         "mechanical": False},
        {"id": "explicit_qk_l2norm",
         "en": "Replace use_qk_l2norm_in_kernel=True by an explicit l2norm of q and k (x * rsqrt(sum(x * x) + eps) over the head dimension) before the call: the operator uses q and k as given.",
         "zh": "把use_qk_l2norm_in_kernel=True改为调用前对q、k显式做l2norm（沿head维x * rsqrt(sum(x * x) + eps)）：算子按原样使用q与k。",
         "mechanical": False},
        {"id": "key_heads_grouping",
         "en": "Optional: pass q and k with Nk heads (drop the model's repeat_interleave up to Nv heads) only after checking on the device which value heads the operator lets share a key head; with the repeat kept (Nk = Nv) the result is the checked one.",
         "zh": "可选：只有在设备上确认算子让哪些value头共享同一key头之后，才以Nk个头传入q、k（去掉模型中扩展到Nv个头的repeat_interleave）；保留repeat（Nk = Nv）时结果即为已校验的结果。",
         "mechanical": False},
    ],
    "checks": ["npu_chunk_gated_delta_rule:*"],
    "facts": {"stage": "prefill"},
    "inputs": {
        "query": {"shape": ["B", "H", "S", "D"], "dtype": "act"},
        "key": {"shape": ["B", "H", "S", "D"], "dtype": "act"},
        "value": {"shape": ["B", "H", "S", "D"], "dtype": "act"},
        "g": {"shape": ["B", "H", "S"], "dtype": "act", "init": "uniform", "low": -1.0, "high": 0.0},
        "beta": {"shape": ["B", "H", "S"], "dtype": "act", "init": "uniform", "low": 0.0, "high": 1.0},
        "initial_state": {"shape": ["B", "H", "D", "D"], "dtype": "act"},
        "eps": {"dtype": "param", "value": 1e-06},
    },
    # the operator takes Dk = Dv = 128 only
    "sizes": {"B": 2, "H": 2, "S": 5, "D": 128},
    "dtypes": ["float32", "bfloat16"],
    "match": {"lookalikes": {"lookalike_no_delta": "fixtures/gated_delta_rule_chunk_nomatch_no_delta.py"}},
    "near_misses": [
        {"file": "fixtures/gated_delta_rule_chunk_nomatch_no_delta.py",
         "reason": "a gated linear attention without the delta correction (the state is not read with k_t before the write): not the gated delta rule the operator computes"},
    ],
    "doc_zh": """对整个prompt计算的门控Delta规则（Gated DeltaNet的prefill）替换为npu_chunk_gated_delta_rule。

功能
    识别用torch按token循环写出、作用于整个prompt的门控Delta规则（q、k沿head维做L2归一化，
    q乘以Dk ** -0.5；每个token把状态[B, H, Dk, Dv]乘以exp(g_t)衰减，写入beta_t乘以v_t
    超出状态对k_t预测的部分，再用q_t读取状态），建议改用torch_npu.npu_chunk_gated_delta_rule：
    对打包序列（TND）计算同一递推的分块并行形式，返回每个token的输出以及各序列的最终状态
    [B, Nv, Dv, Dk]。
原因
    对prompt逐token循环，每个token启动约十个小内核并重写整个状态。分块算子把大部分计算
    变为按token块的矩阵乘，在一个内核内完成。
示例
    query = l2norm(query); key = l2norm(key)
    query = query * query.shape[-1] ** -0.5
    for i in range(seq_len):
        state = state * g[:, :, i].exp()[..., None, None]
        kv_mem = (state * key[:, :, i].unsqueeze(-1)).sum(dim=-2)
        delta = (value[:, :, i] - kv_mem) * beta[:, :, i].unsqueeze(-1)
        state = state + key[:, :, i].unsqueeze(-1) * delta.unsqueeze(-2)
        out[:, :, i] = (state * query[:, :, i].unsqueeze(-1)).sum(dim=-2)
替代写法
    # q、k、v：打包的[T, N, D]；state0：bfloat16的[B, Nv, Dv, Dk]
    q, k = l2norm(q), l2norm(k)   # 算子内部不做归一化
    out, final_state = torch_npu.npu_chunk_gated_delta_rule(
        q, k, v, beta=beta, initial_state=state0, actual_seq_lengths=seq_lens,
        scale=dk ** -0.5, g=g)
修复安全性
    需要前置改造。算子不对q、k做L2归一化：模型的use_qk_l2norm_in_kernel=True须改为调用前
    显式的l2norm（替换代码已包含；见naive_no_l2norm）。beta传入模型sigmoid之后的值，g传入
    对数衰减（float32），而不是exp(g)（见naive_decay_not_log）。需手工重构：输入从
    [B, S, H, D]改为打包的[T, H, D]并给出各序列长度；初始与最终状态为bfloat16，排布为
    [B, Nv, Dv, Dk]，value维在前，而HF与FLA为[.., Dk, Dv]：Dk = Dv = 128时未转置的状态能
    通过所有形状检查却给出错误结果（见naive_state_not_transposed）。数值检查中q、k与v的
    头数相同（即模型repeat_interleave之后的形式）；传入Nk个头可省去repeat，但文档未说明
    哪些value头共享同一key头，须先在设备上验证。文档中actual_seq_lengths的示例传入的是
    累计偏移，而参数说明要求长度：须确认所装版本。检查项：Nk、Nv <= 64，Nv为Nk的整数倍，
    Dk = Dv = 128，bfloat16，A2/A3。HF的prefill后备实现（torch_chunk_gated_delta_rule）按块
    写出该递推，在推导式中补齐与重排，每块求解一次三角方程组；这种写法不是本模式，因此这类模型
    的prefill递推仍是没有规则的步骤（其decode辅助函数中的逐token循环对应
    attention.gated_delta_rule_recurrent；本规则在只在decode分支中的匹配会被丢弃）。
参考
    catalog/attention/npu_chunk_gated_delta_rule.toml（公式、TND、状态排布、注意事项）；
    Yang等，Gated Delta Networks（arXiv 2412.06464）。
""",
}


def search(query, key, value, g, beta, initial_state, eps):
    query = query * torch.rsqrt((query * query).sum(dim=-1, keepdim=True) + eps)
    key = key * torch.rsqrt((key * key).sum(dim=-1, keepdim=True) + eps)
    query = query * query.shape[-1] ** -0.5
    state = initial_state
    out = torch.zeros_like(value)
    for t in range(value.shape[2]):
        k_t = key[:, :, t]
        state = state * g[:, :, t].exp()[..., None, None]
        kv_mem = (state * k_t.unsqueeze(-1)).sum(dim=-2)
        delta = (value[:, :, t] - kv_mem) * beta[:, :, t].unsqueeze(-1)
        state = state + k_t.unsqueeze(-1) * delta.unsqueeze(-2)
        out[:, :, t] = (state * query[:, :, t].unsqueeze(-1)).sum(dim=-2)
    return out, state


def search_divided(query, key, value, g, beta, initial_state, eps):
    query = query * torch.rsqrt((query * query).sum(dim=-1, keepdim=True) + eps)
    key = key * torch.rsqrt((key * key).sum(dim=-1, keepdim=True) + eps)
    # the scale spelled as a division by sqrt(Dk)
    query = query / (query.shape[-1] ** 0.5)
    state = initial_state
    out = torch.zeros_like(value)
    for t in range(value.shape[2]):
        k_t = key[:, :, t]
        state = state * g[:, :, t].exp()[..., None, None]
        kv_mem = (state * k_t.unsqueeze(-1)).sum(dim=-2)
        delta = (value[:, :, t] - kv_mem) * beta[:, :, t].unsqueeze(-1)
        state = state + k_t.unsqueeze(-1) * delta.unsqueeze(-2)
        out[:, :, t] = (state * query[:, :, t].unsqueeze(-1)).sum(dim=-2)
    return out, state


def search_einsum(query, key, value, g, beta, initial_state, eps):
    # Reference-loop style: F.normalize, the scale folded in as a product, einsum reads.
    query = F.normalize(query, p=2, dim=-1) * query.shape[-1] ** -0.5
    key = F.normalize(key, p=2, dim=-1)
    state = initial_state
    out = torch.zeros_like(value)
    for t in range(value.shape[2]):
        k_t = key[:, :, t]
        state = state * g[:, :, t].exp()[..., None, None]
        v_new = (value[:, :, t] - torch.einsum("bhk,bhkv->bhv", k_t, state)) * beta[:, :, t][..., None]
        state = state + torch.einsum("bhk,bhv->bhkv", k_t, v_new)
        out[:, :, t] = torch.einsum("bhk,bhkv->bhv", query[:, :, t], state)
    return out, state


def _to_tokens(x):
    # [B, H, S, ...] -> packed tokens [B * S, H, ...]
    return x.transpose(1, 2).reshape(x.shape[0] * x.shape[2], *x.shape[1:2], *x.shape[3:])


def _run(query, key, value, g, beta, state0):
    batch, heads, seq, dk = query.shape
    out, final = torch_npu.npu_chunk_gated_delta_rule(
        _to_tokens(query), _to_tokens(key), _to_tokens(value), beta=_to_tokens(beta), initial_state=state0,
        actual_seq_lengths=torch.full((batch,), seq, dtype=torch.int32), scale=dk ** -0.5, g=g)
    return out.reshape(batch, seq, heads, -1).transpose(1, 2), final


def replace(query, key, value, g, beta, initial_state, eps):
    # use_qk_l2norm_in_kernel=True made explicit: the operator takes q and k as given
    query = query * torch.rsqrt((query * query).sum(dim=-1, keepdim=True) + eps)
    key = key * torch.rsqrt((key * key).sum(dim=-1, keepdim=True) + eps)
    # the state goes in and comes out value axis first: [B, Nv, Dv, Dk]
    out, final = _run(query, key, value, _to_tokens(g).float(), beta, initial_state.transpose(-1, -2))
    return out, final.transpose(-1, -2)


def naive_no_l2norm(query, key, value, g, beta, initial_state, eps):
    # Tempting: trust the operator to normalise q and k as use_qk_l2norm_in_kernel=True did.
    out, final = _run(query, key, value, _to_tokens(g).float(), beta, initial_state.transpose(-1, -2))
    return out, final.transpose(-1, -2)


def naive_state_not_transposed(query, key, value, g, beta, initial_state, eps):
    # Tempting: hand HF's [.., Dk, Dv] state over as it is; with Dk = Dv every shape fits.
    query = query * torch.rsqrt((query * query).sum(dim=-1, keepdim=True) + eps)
    key = key * torch.rsqrt((key * key).sum(dim=-1, keepdim=True) + eps)
    return _run(query, key, value, _to_tokens(g).float(), beta, initial_state)


def naive_decay_not_log(query, key, value, g, beta, initial_state, eps):
    # Tempting: pass the decay factor exp(g) as g. The operator exponentiates g itself.
    query = query * torch.rsqrt((query * query).sum(dim=-1, keepdim=True) + eps)
    key = key * torch.rsqrt((key * key).sum(dim=-1, keepdim=True) + eps)
    out, final = _run(query, key, value, _to_tokens(g).exp().float(), beta, initial_state.transpose(-1, -2))
    return out, final.transpose(-1, -2)


def lookalike_no_delta(query, key, value, g, beta, initial_state, eps):
    # Gated linear attention: the state decays and takes beta * v k^T without first
    # removing what it already predicts for k_t.
    query = query * torch.rsqrt((query * query).sum(dim=-1, keepdim=True) + eps)
    key = key * torch.rsqrt((key * key).sum(dim=-1, keepdim=True) + eps)
    query = query / (query.shape[-1] ** 0.5)
    state = initial_state
    out = torch.zeros_like(value)
    for t in range(value.shape[2]):
        k_t = key[:, :, t]
        state = state * g[:, :, t].exp()[..., None, None]
        delta = value[:, :, t] * beta[:, :, t].unsqueeze(-1)
        state = state + k_t.unsqueeze(-1) * delta.unsqueeze(-2)
        out[:, :, t] = (state * query[:, :, t].unsqueeze(-1)).sum(dim=-2)
    return out, state
