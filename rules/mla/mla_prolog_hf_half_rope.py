"""Hugging Face MLA's query and key preparation with the half-split `rotate_half` RoPE (MiniCPM3) becomes `npu_mla_prolog_v3` in decode, once W_UK and W_UV are absorbed and the rope rows of the projections are reordered.

What it does
    Finds the multi-head latent attention prolog whose rope parts are rotated with the
    plain `rotate_half` (lane i paired with lane i + d/2, `rope_interleave` false, as
    MiniCPM3 writes it): `q_a_proj`, `q_a_layernorm`, `q_b_proj` viewed per head and
    split into `q_pass` and the rope part; `kv_a_proj_with_mqa` split into the latent,
    normalised by `kv_a_layernorm`, and the shared rope key viewed as [b, 1, s, d];
    `x * cos + rotate_half(x) * sin` on both rope parts. It proposes one
    `torch_npu.npu_mla_prolog_v3`, after two load-time changes: the absorb of `kv_b_proj`
    (as for mla.mla_prolog_hf) and a reorder of the rope rows of `q_b_proj` and
    `kv_a_proj_with_mqa`.
Why
    In decode each layer runs this as about thirty small kernels for one token per
    request (three GEMMs, two RMSNorms, the views and splits, two RoPEs); the operator
    runs them as one kernel and is the entry of the absorbed MLA decode chain.
Example
    q_states = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(hidden_states)))
    q_states = q_states.view(query_shape).transpose(1, 2)
    q_pass, q_rot = torch.split(q_states, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
    kv_pass, k_rot = torch.split(self.kv_a_proj_with_mqa(hidden_states), [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
    k_pass = self.kv_a_layernorm(kv_pass).view(batch_size, 1, seq_length, self.kv_lora_rank)
    k_rot = k_rot.view(batch_size, 1, seq_length, self.qk_rope_head_dim)
    q_rot, k_rot = apply_rotary_pos_emb(q_rot, k_rot, cos, sin)   # x * cos + rotate_half(x) * sin
Use instead
    # once: W_UK from kv_b_proj; the rope rows of q_b_proj and kv_a_proj_with_mqa reordered
    # so that row 2i = old row i and row 2i + 1 = old row i + d/2
    q_latent, q_rope = torch_npu.npu_mla_prolog_v3(
        hidden_states, self.w_dq, self.w_uq_qr_reordered, self.w_uk, self.w_dkv_kr_reordered,
        self.q_a_layernorm.weight, self.kv_a_layernorm.weight, sin, cos,
        self.latent_cache, self.rope_key_cache, cache_index=slot_mapping,
        rmsnorm_epsilon_cq=self.q_a_layernorm.variance_epsilon,
        rmsnorm_epsilon_ckv=self.kv_a_layernorm.variance_epsilon, cache_mode="PA_BSND")[:2]
Fix safety
    Needs prerequisites, several not mechanical. The operator reorders each rope part to
    its even lanes, then its odd ones, and rotates that as two halves with the half-split
    table: on the model's own lanes it would pair lane 2i with lane 2i + 1, not lane i
    with lane i + d/2, and change every rotated value. Reordering the rope rows of the
    two projections once (row 2i = old row i, row 2i + 1 = old row i + d/2) makes the
    operator's even/odd split give back exactly the model's two halves, so it rotates
    the pairs the model rotates and returns them in the model's order; the numeric check
    runs the operator on the reordered weights against the model's chain. The reordered
    rows change what the projections give everywhere, so every other reader (the prefill
    path above all) must use them the same way. The absorb of `kv_b_proj`, the paged
    caches and the [in, out] weights are those of mla.mla_prolog_hf. The shapes are fixed
    by the operator (hidden size from a fixed set, q_lora_rank 1536 or 2048,
    kv_lora_rank 512, qk_nope_head_dim 128 or 192, rope width 64, heads per rank a power
    of two up to 128); the checks evaluate each against the config, and a model outside
    them (MiniCPM3's 2560 / 768 / 256 / 64 / 32) is not applicable.
References
    catalog/mla/npu_mla_prolog_v3.toml; reference_chains.md (module-attention-mla-absorb);
    rules/mla/mla_prolog_hf.py (the interleaved RoPE form and its lookalike for this one).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "mla.mla_prolog_hf_half_rope",
    "title": "HF MLA decode prolog with half-split rotate_half RoPE (MiniCPM3) -> npu_mla_prolog_v3 after the absorb and a rope-row reorder",
    "module": "mla",
    "apis": ["npu_mla_prolog_v3"],
    "stages": ["decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "absorb_kv_b_proj",
         "en": "Rewrite the attention to absorbed MLA: cache the normalised latent and the rotated rope key instead of handing them to the Cache object and expanding them per head with kv_b_proj; fold W_UK = kv_b_proj.weight.view(heads, qk_nope_head_dim + v_head_dim, kv_lora_rank)[:, :qk_nope_head_dim] into the query (the operator returns q_pass @ W_UK), score against the latent and rope-key caches, and multiply the attention output by W_UV (the remaining v_head_dim rows per head) before o_proj (reference chain module-attention-mla-absorb; mla.fia_absorb, mla.v_absorb_transpose_bmm).",
         "zh": "把注意力改写为吸收式MLA：缓存归一化后的潜在向量与旋转后的rope key，不再交给Cache对象后用kv_b_proj逐头展开；把W_UK = kv_b_proj.weight.view(头数, qk_nope_head_dim + v_head_dim, kv_lora_rank)[:, :qk_nope_head_dim]并入query（算子返回q_pass @ W_UK），在潜在缓存与rope key缓存上计算得分，并在o_proj之前用W_UV（每头其余v_head_dim行）乘注意力输出（参考链module-attention-mla-absorb；mla.fia_absorb、mla.v_absorb_transpose_bmm）。",
         "mechanical": False},
        {"id": "paged_latent_cache",
         "en": "Keep the latent and rope-key caches paged, [block_num, block_size, 1, 512] and [block_num, block_size, 1, 64] with block_size a multiple of 16 up to 1024, addressed by one slot id per token (PA_BSND; PA_NZ with the caches cast to FRACTAL_NZ).",
         "zh": "潜在缓存与rope key缓存改为分页：[block_num, block_size, 1, 512]与[block_num, block_size, 1, 64]，block_size为16的倍数且不超过1024，每个token一个slot编号（PA_BSND；PA_NZ时缓存转为FRACTAL_NZ）。",
         "mechanical": False},
        {"id": "prolog_weight_layout",
         "en": "At load time keep q_a_proj, q_b_proj and kv_a_proj_with_mqa weights transposed to [in, out] (FRACTAL_NZ on the device) and W_UK from kv_b_proj as [heads, qk_nope_head_dim, kv_lora_rank].",
         "zh": "加载时把q_a_proj、q_b_proj与kv_a_proj_with_mqa的权重转置为[in, out]（设备上为FRACTAL_NZ），并从kv_b_proj取出W_UK，形状[头数, qk_nope_head_dim, kv_lora_rank]。",
         "mechanical": True},
        {"id": "interleave_rope_rows",
         "en": "At load time reorder the rope rows of q_b_proj (the last qk_rope_head_dim rows of each head) and of kv_a_proj_with_mqa (its last qk_rope_head_dim rows) so that row 2i holds old row i and row 2i + 1 old row i + d/2 (d the rope width): the operator takes the even lanes, then the odd ones, and rotates them as halves, so it then pairs lane i with lane i + d/2 as rotate_half does. Every other reader of these projections (the prefill path, a kv_a_proj_with_mqa output cached elsewhere) must take the same reordered rows or run through the operator.",
         "zh": "加载时重排q_b_proj的rope行（每个头的最后qk_rope_head_dim行）以及kv_a_proj_with_mqa的rope行（最后qk_rope_head_dim行），使第2i行为原第i行、第2i + 1行为原第i + d/2行（d为rope宽度）：算子先取偶数通道再取奇数通道并按两半旋转，这样它配对的正是rotate_half所配对的第i与第i + d/2通道。这些投影的其他读取方（prefill路径、在别处缓存的kv_a_proj_with_mqa输出）须使用同样重排后的行，或同样经过该算子。",
         "mechanical": False},
        {"id": "half_split_cos_sin",
         "en": "Pass the rotary embedding's cos/sin as the model builds them, cat((freqs, freqs), -1): the half-split table the operator reads, one row per token ([T, d] or [B, S, d]).",
         "zh": "按模型的构造方式传入旋转编码的cos/sin，即cat((freqs, freqs), -1)：这正是算子读取的两半式表，每个token一行（[T, d]或[B, S, d]）。",
         "mechanical": True},
    ],
    "checks": ["npu_mla_prolog_v3:*"],
    "facts": {"mla": True, "cache_mode": "PA_BSND", "rotary_mode": "half"},
    "hints": {"class_names": ["MiniCPM3Attention"]},
    "inputs": {
        "x": {"shape": ["B", "S", "H"], "dtype": "act"},
        "w_dq": {"shape": ["Q", "H"], "dtype": "act", "scale": 0.03},
        "gamma_cq": {"shape": ["Q"], "dtype": "act", "init": "ones_noise"},
        "w_uq_qr": {"shape": ["N * (D + R)", "Q"], "dtype": "act", "scale": 0.025},
        "w_dkv_kr": {"shape": ["C + R", "H"], "dtype": "act", "scale": 0.03},
        "gamma_ckv": {"shape": ["C"], "dtype": "act", "init": "ones_noise"},
        "w_kv_b": {"shape": ["N * (D + V)", "C"], "dtype": "act", "scale": 0.09},
        "cos": {"shape": ["B", "S", "R"], "dtype": "act", "init": "half_repeated"},
        "sin": {"shape": ["B", "S", "R"], "dtype": "act", "init": "half_repeated"},
        "qk_head_dim": {"dtype": "param", "expr": "D + R"},
        "eps_cq": {"dtype": "param", "value": 1e-6},
        "eps_ckv": {"dtype": "param", "value": 1e-5},
    },
    "sizes": {"B": 2, "S": 1, "H": 1024, "Q": 1536, "N": 2, "D": 128, "V": 128, "C": 512, "R": 64},
    "dtypes": ["float32", "bfloat16"],
    "absorbed_returns": {"2": {"weight": "w_kv_b", "head_axis": 1}},
    "match": {"contains": ["norm.rms_norm"],
              "anchor_uses": [{"anchor": 2, "allow": ["cat", "return"]}],
              "also_outputs": {"c_q": {
                  "en": "call it with query_norm_flag=True and pass its query_norm output (the normalised query latent, [T, q_lora_rank] or [B, S, q_lora_rank]) to that reader.",
                  "zh": "调用时设query_norm_flag=True，并把其query_norm输出（归一化后的query潜在向量，形状[T, q_lora_rank]或[B, S, q_lora_rank]）交给该读取方。"}},
              "lookalikes": {
                  "lookalike_plain_q_proj": {
                      "near_miss": "fixtures/mla_prolog_hf_half_rope_nomatch_plain_q_proj.py",
                      "inputs": {"w_q": {"shape": ["N * (D + R)", "H"], "dtype": "float32", "scale": 0.03}}}}},
    "near_misses": [
        {"file": "fixtures/mla_prolog_hf_half_rope_nomatch_plain_q_proj.py",
         "reason": "the query comes from one q_proj (q_lora_rank None): the prolog needs the low-rank query, q_a_proj with its RMSNorm and q_b_proj"},
    ],
    "doc_zh": """Hugging Face写法、采用两半式rotate_half RoPE（MiniCPM3）的MLA query与key准备，在吸收W_UK与W_UV并重排投影的rope行之后，于decode阶段替换为npu_mla_prolog_v3。

功能
    识别rope部分用普通rotate_half旋转（第i通道与第i + d/2通道配对，rope_interleave为false，
    MiniCPM3的写法）的多头潜在注意力前处理：q_a_proj、q_a_layernorm、按头展开并拆为q_pass与rope
    部分的q_b_proj；拆为潜在向量（经kv_a_layernorm归一化）与共享rope key（视为[b, 1, s, d]）的
    kv_a_proj_with_mqa；两个rope部分上的x * cos + rotate_half(x) * sin。建议改为一次
    torch_npu.npu_mla_prolog_v3，前提是加载时做两项改动：吸收kv_b_proj（同mla.mla_prolog_hf），
    以及重排q_b_proj与kv_a_proj_with_mqa的rope行。
原因
    decode时每层每个请求只有一个token，这段代码却有约三十个小内核（三次GEMM、两次RMSNorm、视图与
    拆分、两次RoPE）；算子用一个内核完成，也是吸收式MLA decode链的入口。
示例
    q_states = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(hidden_states)))
    q_states = q_states.view(query_shape).transpose(1, 2)
    q_pass, q_rot = torch.split(q_states, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
    kv_pass, k_rot = torch.split(self.kv_a_proj_with_mqa(hidden_states), [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
    k_pass = self.kv_a_layernorm(kv_pass).view(batch_size, 1, seq_length, self.kv_lora_rank)
    k_rot = k_rot.view(batch_size, 1, seq_length, self.qk_rope_head_dim)
    q_rot, k_rot = apply_rotary_pos_emb(q_rot, k_rot, cos, sin)   # x * cos + rotate_half(x) * sin
替代写法
    # 一次性准备：从kv_b_proj取W_UK；重排q_b_proj与kv_a_proj_with_mqa的rope行，
    # 使第2i行为原第i行、第2i + 1行为原第i + d/2行
    q_latent, q_rope = torch_npu.npu_mla_prolog_v3(
        hidden_states, self.w_dq, self.w_uq_qr_reordered, self.w_uk, self.w_dkv_kr_reordered,
        self.q_a_layernorm.weight, self.kv_a_layernorm.weight, sin, cos,
        self.latent_cache, self.rope_key_cache, cache_index=slot_mapping,
        rmsnorm_epsilon_cq=self.q_a_layernorm.variance_epsilon,
        rmsnorm_epsilon_ckv=self.kv_a_layernorm.variance_epsilon, cache_mode="PA_BSND")[:2]
修复安全性
    需要前置改造，其中多项不是机械改写。算子先把每个rope部分重排为偶数通道在前、奇数通道在后，再用
    两半式表按两半旋转：直接作用于模型自身的通道时，它配对的是第2i与第2i + 1通道，而不是第i与第
    i + d/2通道，每个旋转结果都会改变。把两个投影的rope行一次性重排（第2i行为原第i行、第2i + 1行为
    原第i + d/2行）后，算子的奇偶拆分恰好还原出模型的两半，于是旋转的正是模型旋转的通道对，并按模型
    的顺序返回；数值检查用重排后的权重运行算子，与模型的链比较。重排后的行改变了投影在所有地方的
    输出，因此其他读取方（首先是prefill路径）须同样使用它们。kv_b_proj的吸收、分页缓存与[in, out]
    权重同mla.mla_prolog_hf。形状由算子固定（隐藏维属于固定集合，q_lora_rank为1536或2048，
    kv_lora_rank为512，qk_nope_head_dim为128或192，rope宽度为64，每个rank的头数为不超过128的2的幂）；
    检查项按配置逐项评估，不满足的模型（MiniCPM3的2560 / 768 / 256 / 64 / 32）为不适用。
参考
    catalog/mla/npu_mla_prolog_v3.toml；reference_chains.md（module-attention-mla-absorb）；
    rules/mla/mla_prolog_hf.py（交错RoPE写法，以及针对本写法的look-alike）。
""",
}


def search(x, w_dq, gamma_cq, w_uq_qr, w_dkv_kr, gamma_ckv, w_kv_b, cos, sin, qk_head_dim, eps_cq, eps_ckv):
    b, s, _ = x.shape
    q_a = F.linear(x, w_dq)
    input_dtype = q_a.dtype
    h = q_a.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps_cq)
    c_q = gamma_cq * h.to(input_dtype)
    q = F.linear(c_q, w_uq_qr).view(b, s, -1, qk_head_dim).transpose(1, 2)
    q_pass, q_rot = torch.split(q, [q.shape[-1] - cos.shape[-1], cos.shape[-1]], dim=-1)
    kv = F.linear(x, w_dkv_kr)
    latent, k_rot = torch.split(kv, [gamma_ckv.shape[-1], cos.shape[-1]], dim=-1)
    latent_dtype = latent.dtype
    l32 = latent.to(torch.float32)
    l32 = l32 * torch.rsqrt(l32.pow(2).mean(-1, keepdim=True) + eps_ckv)
    normed = gamma_ckv * l32.to(latent_dtype)
    k_rot = k_rot.view(b, 1, s, cos.shape[-1])
    c = cos.unsqueeze(1)
    sn = sin.unsqueeze(1)
    half = cos.shape[-1] // 2
    q_embed = q_rot * c + torch.cat((-q_rot[..., half:], q_rot[..., :half]), dim=-1) * sn
    k_embed = k_rot * c + torch.cat((-k_rot[..., half:], k_rot[..., :half]), dim=-1) * sn
    return q_embed, k_embed, q_pass, normed


def _interleave_halves(rows):
    # row 2i <- row i, row 2i + 1 <- row i + d/2 along the first axis
    half = rows.shape[0] // 2
    return torch.stack([rows[:half], rows[half:]], dim=1).reshape(rows.shape)


def replace(x, w_dq, gamma_cq, w_uq_qr, w_dkv_kr, gamma_ckv, w_kv_b, cos, sin, qk_head_dim, eps_cq, eps_ckv):
    b, s, _ = x.shape
    r = cos.shape[-1]
    heads = w_uq_qr.shape[0] // qk_head_dim
    latent_dim = gamma_ckv.shape[-1]
    # the rope-row prerequisite, done once at load time
    per_head = w_uq_qr.view(heads, qk_head_dim, -1)
    rope_rows = torch.stack([_interleave_halves(per_head[i, qk_head_dim - r:]) for i in range(heads)])
    w_uq_qr_reordered = torch.cat([per_head[:, :qk_head_dim - r], rope_rows], dim=1).reshape(w_uq_qr.shape)
    w_dkv_kr_reordered = torch.cat([w_dkv_kr[:latent_dim], _interleave_halves(w_dkv_kr[latent_dim:])], dim=0)
    # the absorb prerequisite: W_UK is the first qk_nope_head_dim rows of each head of kv_b_proj
    w_uk = w_kv_b.view(heads, -1, latent_dim)[:, :qk_head_dim - r]
    block = 16 * (s // 16 + 1)
    latent_cache = x.new_zeros(b, block, 1, latent_dim)
    rope_cache = x.new_zeros(b, block, 1, r)
    slots = torch.arange(b, device=x.device)[:, None] * block + torch.arange(s, device=x.device)[None]
    q_latent, q_rope = torch_npu.npu_mla_prolog_v3(
        x, w_dq.t(), w_uq_qr_reordered.t(), w_uk, w_dkv_kr_reordered.t(), gamma_cq, gamma_ckv, sin, cos,
        latent_cache, rope_cache, cache_index=slots.reshape(-1),
        rmsnorm_epsilon_cq=eps_cq, rmsnorm_epsilon_ckv=eps_ckv, cache_mode="PA_BSND")[:2]
    normed = latent_cache[:, :s, 0]
    k_embed = rope_cache[:, :s, 0].unsqueeze(1)
    return q_rope.transpose(1, 2), k_embed, q_latent.transpose(1, 2), normed


def naive_rows_as_they_are(x, w_dq, gamma_cq, w_uq_qr, w_dkv_kr, gamma_ckv, w_kv_b, cos, sin, qk_head_dim,
                           eps_cq, eps_ckv):
    # The operator on the model's own rows: it pairs lanes 2i and 2i + 1, not i and i + d/2.
    b, s, _ = x.shape
    r = cos.shape[-1]
    heads = w_uq_qr.shape[0] // qk_head_dim
    latent_dim = gamma_ckv.shape[-1]
    w_uk = w_kv_b.view(heads, -1, latent_dim)[:, :qk_head_dim - r]
    block = 16 * (s // 16 + 1)
    latent_cache = x.new_zeros(b, block, 1, latent_dim)
    rope_cache = x.new_zeros(b, block, 1, r)
    slots = torch.arange(b, device=x.device)[:, None] * block + torch.arange(s, device=x.device)[None]
    q_latent, q_rope = torch_npu.npu_mla_prolog_v3(
        x, w_dq.t(), w_uq_qr.t(), w_uk, w_dkv_kr.t(), gamma_cq, gamma_ckv, sin, cos,
        latent_cache, rope_cache, cache_index=slots.reshape(-1),
        rmsnorm_epsilon_cq=eps_cq, rmsnorm_epsilon_ckv=eps_ckv, cache_mode="PA_BSND")[:2]
    normed = latent_cache[:, :s, 0]
    k_embed = rope_cache[:, :s, 0].unsqueeze(1)
    return q_rope.transpose(1, 2), k_embed, q_latent.transpose(1, 2), normed


def lookalike_plain_q_proj(x, w_dq, gamma_cq, w_uq_qr, w_dkv_kr, gamma_ckv, w_kv_b, cos, sin, qk_head_dim,
                           eps_cq, eps_ckv, w_q=None):
    # q_lora_rank None: one full-rank q_proj, no query latent and no norm on it
    b, s, _ = x.shape
    q = F.linear(x, w_q).view(b, s, -1, qk_head_dim).transpose(1, 2)
    q_pass, q_rot = torch.split(q, [q.shape[-1] - cos.shape[-1], cos.shape[-1]], dim=-1)
    c = cos.unsqueeze(1)
    sn = sin.unsqueeze(1)
    half = cos.shape[-1] // 2
    q_embed = q_rot * c + torch.cat((-q_rot[..., half:], q_rot[..., :half]), dim=-1) * sn
    return q_embed
