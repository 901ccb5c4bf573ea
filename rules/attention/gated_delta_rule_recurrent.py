"""Token-by-token gated delta rule (Gated DeltaNet decode) becomes `npu_recurrent_gated_delta_rule`.

What it does
    Finds the gated delta rule written as a loop over tokens in torch: q and k
    L2-normalised over the head dimension (what `use_qk_l2norm_in_kernel=True` asks the
    kernel to do), q scaled by Dk ** -0.5, then per token the state [B, H, Dk, Dv] is
    decayed by exp(g_t), the value it already predicts for k_t is taken from v_t, the
    difference times beta_t is written back along k_t, and the output reads the state
    with q_t. It is the torch fallback a hybrid model (Qwen3-Next, Qwen3.5) runs for a
    decode step, and the reference loop of FLA-style code. It proposes
    `torch_npu.npu_recurrent_gated_delta_rule` over packed tokens (TND), the states
    kept in a slot pool laid out [slots, Nv, Dv, Dk] and updated in place.
Why
    The loop launches about ten small kernels per token and reads and writes the whole
    [H, Dk, Dv] state several times in float32. The fused operator reads each state
    once, updates it and writes it back in one kernel for up to 8 tokens per request
    (decode and MTP drafts).
Example
    query = l2norm(query); key = l2norm(key)
    query = query / (query.shape[-1] ** 0.5)
    for i in range(seq_len):
        state = state * g[:, :, i].exp()[..., None, None]
        kv_mem = (state * key[:, :, i].unsqueeze(-1)).sum(dim=-2)
        delta = (value[:, :, i] - kv_mem) * beta[:, :, i].unsqueeze(-1)
        state = state + key[:, :, i].unsqueeze(-1) * delta.unsqueeze(-2)
        out[:, :, i] = (state * query[:, :, i].unsqueeze(-1)).sum(dim=-2)
Use instead
    # q, k, v: [T, N, D] packed tokens; pool: [slots, Nv, Dv, Dk] bfloat16
    q, k = l2norm(q), l2norm(k)   # the operator does not normalise
    out = torch_npu.npu_recurrent_gated_delta_rule(
        q, k, v, pool, beta=beta, scale=dk ** -0.5, actual_seq_lengths=tokens_per_request,
        ssm_state_indices=slot_of_token, g=g)
Fix safety
    Needs prerequisites. The operator does not L2-normalise q and k: the model's
    `use_qk_l2norm_in_kernel=True` becomes an explicit l2norm in front of the call (the
    replacement does it; dropping it changes every output, see naive_no_l2norm). beta is
    passed as the model computes it (after its sigmoid) and g as the log decay (the
    model's -exp(A_log) * softplus(a + dt_bias)), float32, not exp(g)
    (naive_decay_not_log). Refactors by hand: the inputs go from [B, S, H, D] (or the
    fallback's [B, H, S, D]) to packed [T, H, D] with per-request token counts; the
    recurrent-state cache becomes a bfloat16 pool [slots, Nv, Dv, Dk], value axis first
    where HF and FLA keep [.., Dk, Dv] (naive_state_not_transposed), indexed per token by
    ssm_state_indices. The numeric check passes q and k with as many heads as v (what the
    model's repeat_interleave gives); handing the operator Nk heads instead saves the
    repeat, but the documentation does not say which value heads share a key head, so
    validate that grouping on the device first. Checked: 1 to 8 tokens per request,
    Nk, Nv <= 256, Dk, Dv <= 512, bfloat16, A2/A3.
    The CPU stand-in models a request starting from its first token's slot and each
    token's state written to its own slot; speculative acceptance (num_accepted_tokens)
    is not modelled.
References
    catalog/attention/npu_recurrent_gated_delta_rule.toml (formula, TND, state layout,
    pitfalls); Yang et al., Gated Delta Networks (arXiv 2412.06464).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "attention.gated_delta_rule_recurrent",
    "title": "gated delta rule as a torch token loop (Gated DeltaNet decode) -> npu_recurrent_gated_delta_rule",
    "module": "attention",
    "apis": ["npu_recurrent_gated_delta_rule"],
    "stages": ["decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "pack_tokens_tnd",
         "en": "Hand the operator packed tokens: q, k, v as [T, N, D], beta and g as [T, Nv] (g float32), with the tokens of each request (1 to 8) in actual_seq_lengths, instead of the model's [B, S, H, D].",
         "zh": "以打包的token形式传入：q、k、v为[T, N, D]，beta与g为[T, Nv]（g为float32），各请求的token数（1至8）放入actual_seq_lengths，而不是模型的[B, S, H, D]。",
         "mechanical": False},
        {"id": "state_pool_vk_bf16",
         "en": "Keep the recurrent states in a bfloat16 slot pool [slots, Nv, Dv, Dk] (value axis before key axis: transpose the last two axes of HF/FLA's [.., Dk, Dv] states), updated in place and addressed per token through ssm_state_indices; the HF cache's recurrent_states go.",
         "zh": "把递推状态保存在bfloat16的槽位池[slots, Nv, Dv, Dk]中（value维在key维之前：HF/FLA的[.., Dk, Dv]状态需交换最后两维），原地更新，并通过ssm_state_indices按token寻址；不再使用HF缓存的recurrent_states。",
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
    "checks": ["npu_recurrent_gated_delta_rule:*"],
    "facts": {"stage": "decode", "q_seq_len": 1},
    "inputs": {
        "query": {"shape": ["B", "H", "L", "DK"], "dtype": "act"},
        "key": {"shape": ["B", "H", "L", "DK"], "dtype": "act"},
        "value": {"shape": ["B", "H", "L", "DV"], "dtype": "act"},
        "g": {"shape": ["B", "H", "L"], "dtype": "act", "init": "uniform", "low": -1.0, "high": 0.0},
        "beta": {"shape": ["B", "H", "L"], "dtype": "act", "init": "uniform", "low": 0.0, "high": 1.0},
        "initial_state": {"shape": ["B", "H", "DK", "DV"], "dtype": "act"},
        "eps": {"dtype": "param", "value": 1e-06},
    },
    # L: new tokens per request in this call (1 in plain decode; the operator takes up to 8).
    # Dk != Dv, so a state handed over without swapping its last two axes is refused by shape.
    "sizes": {"B": 3, "H": 4, "L": 1, "DK": 32, "DV": 16},
    "dtypes": ["float32", "bfloat16"],
    "match": {"lookalikes": {"lookalike_no_delta": "fixtures/gated_delta_rule_recurrent_nomatch_no_delta.py"}},
    "near_misses": [
        {"file": "fixtures/gated_delta_rule_recurrent_nomatch_no_delta.py",
         "reason": "a gated linear attention without the delta correction (the state is not read with k_t before the write): not the gated delta rule the operator computes"},
    ],
    "doc_zh": """以torch逐token循环写出的门控Delta规则（Gated DeltaNet的decode）替换为npu_recurrent_gated_delta_rule。

功能
    识别用torch按token循环写出的门控Delta规则：q、k沿head维做L2归一化（即
    use_qk_l2norm_in_kernel=True要求内核完成的步骤），q乘以Dk ** -0.5；之后每个token先把
    状态[B, H, Dk, Dv]乘以exp(g_t)衰减，从v_t中减去状态对k_t已有的预测，差值乘beta_t后沿
    k_t写回状态，输出再用q_t读取状态。这是混合模型（Qwen3-Next、Qwen3.5）decode步运行的
    torch后备实现，也是FLA风格代码中的参考循环。建议改用对打包token（TND）计算的
    torch_npu.npu_recurrent_gated_delta_rule，状态保存在排布为[slots, Nv, Dv, Dk]的槽位池中
    并原地更新。
原因
    该循环每个token启动约十个小内核，并以float32多次读写整个[H, Dk, Dv]状态。融合算子在
    一个内核内对每个请求最多8个token（decode与MTP草稿）读取一次状态、完成更新并写回。
示例
    query = l2norm(query); key = l2norm(key)
    query = query / (query.shape[-1] ** 0.5)
    for i in range(seq_len):
        state = state * g[:, :, i].exp()[..., None, None]
        kv_mem = (state * key[:, :, i].unsqueeze(-1)).sum(dim=-2)
        delta = (value[:, :, i] - kv_mem) * beta[:, :, i].unsqueeze(-1)
        state = state + key[:, :, i].unsqueeze(-1) * delta.unsqueeze(-2)
        out[:, :, i] = (state * query[:, :, i].unsqueeze(-1)).sum(dim=-2)
替代写法
    # q、k、v：打包的[T, N, D]；pool：bfloat16的[slots, Nv, Dv, Dk]
    q, k = l2norm(q), l2norm(k)   # 算子内部不做归一化
    out = torch_npu.npu_recurrent_gated_delta_rule(
        q, k, v, pool, beta=beta, scale=dk ** -0.5, actual_seq_lengths=tokens_per_request,
        ssm_state_indices=slot_of_token, g=g)
修复安全性
    需要前置改造。算子不对q、k做L2归一化：模型的use_qk_l2norm_in_kernel=True须改为调用前
    显式的l2norm（替换代码已包含；去掉它会改变所有输出，见naive_no_l2norm）。beta按模型
    计算的值传入（sigmoid之后），g传入对数衰减（模型的-exp(A_log) * softplus(a + dt_bias)），
    为float32，而不是exp(g)（见naive_decay_not_log）。需手工重构：输入从[B, S, H, D]（或
    后备实现中的[B, H, S, D]）改为打包的[T, H, D]并给出各请求的token数；递推状态缓存改为
    bfloat16的槽位池[slots, Nv, Dv, Dk]，value维在前，而HF与FLA为[.., Dk, Dv]（见
    naive_state_not_transposed），通过ssm_state_indices按token寻址。数值检查中q、k与v的
    头数相同（即模型repeat_interleave之后的形式）；改为向算子传入Nk个头可省去repeat，但文档
    未说明哪些value头共享同一key头，须先在设备上验证分组。检查项：每个请求1至8个token，
    Nk、Nv <= 256，Dk、Dv <= 512，bfloat16，A2/A3。CPU替身假定请求从其第一个token的槽位
    读取初始状态，每个token的新状态写入自己的槽位；投机解码的接受数（num_accepted_tokens）
    未建模。
参考
    catalog/attention/npu_recurrent_gated_delta_rule.toml（公式、TND、状态排布、注意事项）；
    Yang等，Gated Delta Networks（arXiv 2412.06464）。
""",
}


def search(query, key, value, g, beta, initial_state, eps):
    query = query * torch.rsqrt((query * query).sum(dim=-1, keepdim=True) + eps)
    key = key * torch.rsqrt((key * key).sum(dim=-1, keepdim=True) + eps)
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


def search_scaled_product(query, key, value, g, beta, initial_state, eps):
    query = query * torch.rsqrt((query * query).sum(dim=-1, keepdim=True) + eps)
    key = key * torch.rsqrt((key * key).sum(dim=-1, keepdim=True) + eps)
    # the scale spelled as a product with Dk ** -0.5
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


def replace(query, key, value, g, beta, initial_state, eps):
    batch, heads, seq, dk = query.shape
    dv = value.shape[-1]
    # use_qk_l2norm_in_kernel=True made explicit: the operator takes q and k as given
    query = query * torch.rsqrt((query * query).sum(dim=-1, keepdim=True) + eps)
    key = key * torch.rsqrt((key * key).sum(dim=-1, keepdim=True) + eps)
    tokens = batch * seq
    # one state slot per token, value axis first; each request starts from its first token's slot
    pool = torch.zeros(tokens, heads, dv, dk, dtype=value.dtype)
    first = torch.arange(batch) * seq
    pool[first] = initial_state.transpose(-1, -2).to(value.dtype)
    out = torch_npu.npu_recurrent_gated_delta_rule(
        _to_tokens(query), _to_tokens(key), _to_tokens(value), pool, beta=_to_tokens(beta),
        scale=dk ** -0.5, actual_seq_lengths=torch.full((batch,), seq, dtype=torch.int32),
        ssm_state_indices=torch.arange(tokens, dtype=torch.int32), g=_to_tokens(g).float())
    out = out.reshape(batch, seq, heads, dv).transpose(1, 2)
    return out, pool[first + seq - 1].transpose(-1, -2)


def naive_no_l2norm(query, key, value, g, beta, initial_state, eps):
    # Tempting: hand q and k over as the model passes them to the kernel, trusting the
    # operator to normalise them as use_qk_l2norm_in_kernel=True did. It does not.
    batch, heads, seq, dk = query.shape
    dv = value.shape[-1]
    pool = torch.zeros(batch * seq, heads, dv, dk, dtype=value.dtype)
    first = torch.arange(batch) * seq
    pool[first] = initial_state.transpose(-1, -2).to(value.dtype)
    out = torch_npu.npu_recurrent_gated_delta_rule(
        _to_tokens(query), _to_tokens(key), _to_tokens(value), pool, beta=_to_tokens(beta),
        scale=dk ** -0.5, actual_seq_lengths=torch.full((batch,), seq, dtype=torch.int32),
        ssm_state_indices=torch.arange(batch * seq, dtype=torch.int32), g=_to_tokens(g).float())
    return out.reshape(batch, seq, heads, dv).transpose(1, 2), pool[first + seq - 1].transpose(-1, -2)


def naive_state_not_transposed(query, key, value, g, beta, initial_state, eps):
    # Tempting: keep HF's [.., Dk, Dv] state as the pool. The operator reads [.., Dv, Dk].
    batch, heads, seq, dk = query.shape
    query = query * torch.rsqrt((query * query).sum(dim=-1, keepdim=True) + eps)
    key = key * torch.rsqrt((key * key).sum(dim=-1, keepdim=True) + eps)
    pool = torch.zeros(batch * seq, *initial_state.shape[1:], dtype=value.dtype)
    first = torch.arange(batch) * seq
    pool[first] = initial_state.to(value.dtype)
    out = torch_npu.npu_recurrent_gated_delta_rule(
        _to_tokens(query), _to_tokens(key), _to_tokens(value), pool, beta=_to_tokens(beta),
        scale=dk ** -0.5, actual_seq_lengths=torch.full((batch,), seq, dtype=torch.int32),
        ssm_state_indices=torch.arange(batch * seq, dtype=torch.int32), g=_to_tokens(g).float())
    return out.reshape(batch, seq, heads, -1).transpose(1, 2), pool[first + seq - 1]


def naive_decay_not_log(query, key, value, g, beta, initial_state, eps):
    # Tempting: pass the decay factor exp(g) as g. The operator exponentiates g itself.
    batch, heads, seq, dk = query.shape
    dv = value.shape[-1]
    query = query * torch.rsqrt((query * query).sum(dim=-1, keepdim=True) + eps)
    key = key * torch.rsqrt((key * key).sum(dim=-1, keepdim=True) + eps)
    pool = torch.zeros(batch * seq, heads, dv, dk, dtype=value.dtype)
    first = torch.arange(batch) * seq
    pool[first] = initial_state.transpose(-1, -2).to(value.dtype)
    out = torch_npu.npu_recurrent_gated_delta_rule(
        _to_tokens(query), _to_tokens(key), _to_tokens(value), pool, beta=_to_tokens(beta),
        scale=dk ** -0.5, actual_seq_lengths=torch.full((batch,), seq, dtype=torch.int32),
        ssm_state_indices=torch.arange(batch * seq, dtype=torch.int32), g=_to_tokens(g).exp().float())
    return out.reshape(batch, seq, heads, dv).transpose(1, 2), pool[first + seq - 1].transpose(-1, -2)


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
