"""Hugging Face MLA's query and key preparation (low-rank query, interleaved RoPE, latent key path) becomes `npu_mla_prolog_v3` in decode, once W_UK and W_UV are absorbed.

What it does
    Finds the prolog of the multi-head latent attention as Hugging Face transformers
    writes it (DeepSeek-V3, DeepSeek-V3.2, GLM-4-MoE-Lite, Youtu, ...): the query goes
    down through `q_a_proj`, is normalised by `q_a_layernorm` (RMSNorm in float32), goes
    up through `q_b_proj`, is viewed per head, transposed to [b, heads, s, d] and split
    into the part without position (`q_pass`, `qk_nope_head_dim` wide) and the rope part;
    `kv_a_proj_with_mqa` is split into the latent (`kv_lora_rank` wide), normalised by
    `kv_a_layernorm`, and the one rope key all heads share, viewed as [b, 1, s, d]. Both
    rope parts are rotated with the interleaved RoPE `config.rope_interleave` selects:
    the even/odd lanes rotated by the first half of the cos/sin tables and concatenated,
    or (older files) the lanes reordered with `view(b, h, s, d // 2, 2).transpose(4, 3)`
    and then rotated with `rotate_half` and the full tables. It proposes one
    `torch_npu.npu_mla_prolog_v3` that returns the query already folded with W_UK and the
    rotated query part, and writes the normalised latent and the rotated rope key into
    paged caches.
Why
    In decode each layer runs this as about thirty small kernels for one token per
    request: three GEMMs, two RMSNorms of eight element-wise kernels each, the views and
    transposes, two RoPEs with their slices, multiplies and concatenations; the operator
    runs them as one kernel. It is also what makes the absorbed MLA decode chain possible
    at all: the expert Ascend port of DeepSeek (cann-recipes-infer, which keeps the Hugging
    Face module layout) calls it on exactly this code after absorbing kv_b_proj, and then
    runs FIA over the latent cache and the V absorb.
Example
    q_states = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(hidden_states)))
    q_states = q_states.view(batch_size, seq_length, -1, self.qk_head_dim).transpose(1, 2)
    q_pass, q_rot = torch.split(q_states, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
    kv_nope, k_rot = torch.split(self.kv_a_proj_with_mqa(hidden_states), [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
    kv_nope = self.kv_a_layernorm(kv_nope)
    k_rot = k_rot.view(batch_size, 1, seq_length, self.qk_rope_head_dim)
    q_rot, k_rot = apply_rotary_pos_emb_interleave(q_rot, k_rot, cos, sin)
Use instead
    # once at load time: W_UK = kv_b_proj.weight.view(heads, nope + v, kv_lora_rank)[:, :nope]
    q_latent, q_rope = torch_npu.npu_mla_prolog_v3(
        hidden_states, self.w_dq, self.w_uq_qr, self.w_uk, self.w_dkv_kr,
        self.q_a_layernorm.weight, self.kv_a_layernorm.weight, sin, cos,
        self.latent_cache, self.rope_key_cache, cache_index=slot_mapping,
        rmsnorm_epsilon_cq=self.q_a_layernorm.variance_epsilon,
        rmsnorm_epsilon_ckv=self.kv_a_layernorm.variance_epsilon, cache_mode="PA_BSND")[:2]
    # attention over the latent cache (FIA with query_rope/key_rope), then W_UV on its output
Fix safety
    Needs prerequisites, three of them not mechanical. The Hugging Face attention
    expands the latent per head with `kv_b_proj` and attends over full keys and values;
    the operator returns the query in latent space instead (q_pass times W_UK, W_UK being
    `kv_b_proj.weight` viewed [heads, nope + v, kv_lora_rank] and cut to its first `nope`
    rows per head). The attention must therefore be rewritten to absorbed MLA: cache the
    normalised latent and the rope key (not the expanded keys and values), score the
    absorbed query against the latent cache and the rotated query part against the
    rope-key cache, and multiply the attention output by W_UV (the value half of
    `kv_b_proj`) before `o_proj` (reference chain module-attention-mla-absorb). The numeric
    check folds the search's q_pass with W_UK before comparing, which is that same algebra,
    and reads the latent and the rope key back from the caches the operator writes.
    Besides, the operator takes its weights as [in, out] and its caches paged (block size
    a multiple of 16, at most 1024, one slot per token), and it reorders each rope part to
    even lanes then odd before rotating, which is what the interleaved Hugging Face RoPE
    returns too: the outputs agree without a reorder, but any reader of the rope-key cache
    (the prefill writer included) must keep that order. The shapes are fixed by the
    operator (hidden size from a fixed set, q_lora_rank 1536 or 2048, kv_lora_rank 512,
    qk_nope_head_dim 128 or 192, rope width 64, heads per rank a power of two up to 128);
    the checks evaluate each against the config and the TP size, and a model outside them
    is not applicable. Not matched: a model with a plain `q_proj` (`q_lora_rank` None, as
    Kimi-Linear), a rope part rotated with plain `rotate_half` (`rope_interleave` false, as
    MiniCPM3: the operator pairs other lanes) or as complex pairs (DeepSeek-V2's
    `freqs_cis`: mla.mla_prolog_hf_complex), and a q_pass that is read by anything but
    its concatenation with the rotated part (already folded with W_UK, the absorbed form
    that `mla.mla_prolog_v3` maps).
References
    catalog/mla/npu_mla_prolog_v3.toml; reference_chains.md (module-attention-mla-absorb,
    decode: prolog); pitfalls.md 4.2; hicann/cann-recipes-infer models/deepseek_r1 (decode
    prolog); rules/mla/mla_prolog_v3.py (official absorbed form); rules/mla/kv_rmsnorm_rope_hf.py
    (the same key path in prefill).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "mla.mla_prolog_hf",
    "title": "HF MLA decode prolog (q_a/q_b with norm, kv_a with norm, interleaved RoPE) -> npu_mla_prolog_v3 after the W_UK/W_UV absorb",
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
        {"id": "deinterleaved_cos_sin",
         "en": "Pass the rotary embedding's cos/sin, which Hugging Face builds as cat((freqs, freqs), -1): that is the de-interleaved table the operator reads, one row per token ([T, 64] or [B, S, 64]).",
         "zh": "传入旋转编码的cos/sin；Hugging Face按cat((freqs, freqs), -1)构造，正是算子读取的解交错表，每个token一行（[T, 64]或[B, S, 64]）。",
         "mechanical": True},
        {"id": "query_rope_deinterleaved_reader",
         "en": "The rotated query part and the rope-key cache are in the interleaved RoPE's output order (even lanes, then odd), as Hugging Face's own rotation leaves them: the attention reading them and the prefill path filling the rope-key cache (mla.kv_rmsnorm_rope_hf) must keep that order.",
         "zh": "旋转后的query rope部分与rope key缓存为交错RoPE的输出顺序（先偶数通道后奇数通道），与Hugging Face自身旋转的结果一致：读取它们的注意力以及写rope key缓存的prefill路径（mla.kv_rmsnorm_rope_hf）须保持该顺序。",
         "mechanical": False},
    ],
    "checks": ["npu_mla_prolog_v3:*"],
    "facts": {"mla": True, "cache_mode": "PA_BSND", "rotary_mode": "interleave"},
    "hints": {"class_names": ["DeepseekV3Attention", "DeepseekV32Attention", "Glm4MoeLiteAttention",
                              "YoutuAttention", "AXK1Attention", "GlmMoeDsaAttention"]},
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
    "match": {"contains": ["norm.rms_norm", "rope.rope_deinterleave_half", "mla.kv_rmsnorm_rope_hf"],
              "anchor_uses": [{"anchor": 2, "allow": ["cat", "return"]}],
              "also_outputs": {"c_q": {
                  "en": "call it with query_norm_flag=True and pass its query_norm output (the normalised query latent, [T, q_lora_rank] or [B, S, q_lora_rank]) to that reader, as DeepSeek-V3.2's indexer needs.",
                  "zh": "调用时设query_norm_flag=True，并把其query_norm输出（归一化后的query潜在向量，形状[T, q_lora_rank]或[B, S, q_lora_rank]）交给该读取方，DeepSeek-V3.2的索引器即需如此。"}},
              "lookalikes": {
                  "lookalike_half_mode_rope": "fixtures/mla_prolog_hf_nomatch_half_mode_rope.py",
                  "lookalike_plain_q_proj": {
                      "near_miss": "fixtures/mla_prolog_hf_nomatch_plain_q_proj.py",
                      "inputs": {"w_q": {"shape": ["N * (D + R)", "H"], "dtype": "float32", "scale": 0.03}}}}},
    "near_misses": [
        {"file": "fixtures/mla_prolog_hf_nomatch_plain_q_proj.py",
         "reason": "the query comes from one q_proj (q_lora_rank None): the prolog needs the low-rank query, q_a_proj with its RMSNorm and q_b_proj"},
        {"file": "fixtures/mla_prolog_hf_nomatch_half_mode_rope.py",
         "reason": "the rope parts are rotated with plain rotate_half (rope_interleave false): the operator reorders the lanes to even then odd first and would pair other lanes, unless the rope rows of q_b_proj and kv_a_proj_with_mqa are permuted at load time"},
    ],
    "doc_zh": """Hugging Face写法的MLA query与key准备（低秩query、交错RoPE、潜在key路径）在吸收W_UK与W_UV之后，于decode阶段替换为npu_mla_prolog_v3。

功能
    识别Hugging Face transformers中多头潜在注意力的前处理（DeepSeek-V3、DeepSeek-V3.2、
    GLM-4-MoE-Lite、Youtu等）：query经q_a_proj下投影，经q_a_layernorm（float32计算的RMSNorm）
    归一化，再经q_b_proj上投影，按头展开并转置为[b, 头数, s, d]，拆为无位置部分（q_pass，宽
    qk_nope_head_dim）与rope部分；kv_a_proj_with_mqa的输出拆为潜在向量（宽kv_lora_rank，经
    kv_a_layernorm归一化）和所有头共用的一个rope key（视为[b, 1, s, d]）。两个rope部分都用
    config.rope_interleave选择的交错RoPE旋转：或用cos/sin表的前一半分别旋转偶数与奇数通道后拼接，
    或（较早的文件）先用view(b, h, s, d // 2, 2).transpose(4, 3)重排通道，再用完整的表做
    rotate_half。建议改为一次torch_npu.npu_mla_prolog_v3：它返回已与W_UK相乘的query和旋转后的
    query rope部分，并把归一化的潜在向量与旋转后的rope key写入分页缓存。
原因
    decode时每层每个请求只有一个token，这段代码却有约三十个小内核：三次GEMM、两次各含八个逐元素
    内核的RMSNorm、视图与转置、两次带切片、乘法与拼接的RoPE；算子用一个内核完成。它也是吸收式
    MLA decode链的前提：DeepSeek的专家昇腾移植（cann-recipes-infer，保留Hugging Face的模块结构）
    在吸收kv_b_proj之后正是在这段代码上调用该算子，随后在潜在缓存上运行FIA并做V吸收。
示例
    q_states = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(hidden_states)))
    q_states = q_states.view(batch_size, seq_length, -1, self.qk_head_dim).transpose(1, 2)
    q_pass, q_rot = torch.split(q_states, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
    kv_nope, k_rot = torch.split(self.kv_a_proj_with_mqa(hidden_states), [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
    kv_nope = self.kv_a_layernorm(kv_nope)
    k_rot = k_rot.view(batch_size, 1, seq_length, self.qk_rope_head_dim)
    q_rot, k_rot = apply_rotary_pos_emb_interleave(q_rot, k_rot, cos, sin)
替代写法
    # 加载时一次性取出：W_UK = kv_b_proj.weight.view(头数, nope + v, kv_lora_rank)[:, :nope]
    q_latent, q_rope = torch_npu.npu_mla_prolog_v3(
        hidden_states, self.w_dq, self.w_uq_qr, self.w_uk, self.w_dkv_kr,
        self.q_a_layernorm.weight, self.kv_a_layernorm.weight, sin, cos,
        self.latent_cache, self.rope_key_cache, cache_index=slot_mapping,
        rmsnorm_epsilon_cq=self.q_a_layernorm.variance_epsilon,
        rmsnorm_epsilon_ckv=self.kv_a_layernorm.variance_epsilon, cache_mode="PA_BSND")[:2]
    # 之后在潜在缓存上做注意力（带query_rope/key_rope的FIA），再对其输出乘W_UV
修复安全性
    需要前置改造，其中三项不是机械改写。Hugging Face的注意力用kv_b_proj把潜在向量逐头展开，
    在完整的key与value上计算；算子返回的却是潜在空间中的query（q_pass乘W_UK，W_UK为
    kv_b_proj.weight视为[头数, nope + v, kv_lora_rank]后每头取前nope行）。因此注意力须改写为
    吸收式MLA：缓存归一化的潜在向量与rope key（而非展开后的key与value），用吸收后的query对潜在
    缓存、用旋转后的query rope部分对rope key缓存计算得分，并在o_proj之前把注意力输出乘以W_UV
    （kv_b_proj的value部分）（参考链module-attention-mla-absorb）。数值检查在比较前把search返回的
    q_pass与W_UK相乘，即同一线性代数；潜在向量与rope key则从算子写入的缓存中读回比较。此外，算子
    要求权重为[in, out]、缓存分页（block大小为16的倍数且不超过1024，每个token一个slot），并在旋转
    前把每个rope部分重排为先偶数后奇数通道，这与Hugging Face交错RoPE的输出顺序相同：两者无需重排
    即一致，但rope key缓存的所有读取方（包括prefill写入方）都须保持此顺序。形状由算子固定（隐藏维
    属于固定集合，q_lora_rank为1536或2048，kv_lora_rank为512，qk_nope_head_dim为128或192，rope
    宽度为64，每个rank的头数为不超过128的2的幂）；检查项按配置与TP规模逐项评估，不满足的模型为
    不适用。不匹配的情形：只有一个q_proj的模型（q_lora_rank为None，如Kimi-Linear）；rope部分用
    普通rotate_half旋转（rope_interleave为false，如MiniCPM3：算子配对的通道不同）或按复数成对旋转
    （DeepSeek-V2的freqs_cis：见mla.mla_prolog_hf_complex）；以及q_pass除与旋转部分拼接外还被其他运算读取
    的情形（已与W_UK相乘，即mla.mla_prolog_v3对应的吸收写法）。
参考
    catalog/mla/npu_mla_prolog_v3.toml；reference_chains.md（module-attention-mla-absorb，
    解码：prolog）；pitfalls.md 4.2；hicann/cann-recipes-infer models/deepseek_r1（decode前处理）；
    rules/mla/mla_prolog_v3.py（官方吸收写法）；rules/mla/kv_rmsnorm_rope_hf.py（prefill中的同一
    key路径）。
""",
}


def search(x, w_dq, gamma_cq, w_uq_qr, w_dkv_kr, gamma_ckv, w_kv_b, cos, sin, qk_head_dim, eps_cq, eps_ckv):
    # transformers 5.x: apply_rotary_pos_emb_interleave on even/odd lanes with the first half of the tables
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
    c = cos[..., :cos.shape[-1] // 2].unsqueeze(1)
    sn = sin[..., :sin.shape[-1] // 2].unsqueeze(1)
    q1 = q_rot[..., 0::2]
    q2 = q_rot[..., 1::2]
    k1 = k_rot[..., 0::2]
    k2 = k_rot[..., 1::2]
    q_embed = torch.cat([q1 * c - q2 * sn, q2 * c + q1 * sn], dim=-1)
    k_embed = torch.cat([k1 * c - k2 * sn, k2 * c + k1 * sn], dim=-1)
    return q_embed, k_embed, q_pass, normed


def search_reorder_rotate_half(x, w_dq, gamma_cq, w_uq_qr, w_dkv_kr, gamma_ckv, w_kv_b, cos, sin, qk_head_dim,
                               eps_cq, eps_ckv):
    # transformers 4.x: the lanes reordered to even-then-odd, then rotate_half with the full tables
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
    bq, hq, sq, d = q_rot.shape
    q_rot = q_rot.view(bq, hq, sq, d // 2, 2).transpose(4, 3).reshape(bq, hq, sq, d)
    bk, hk, sk, dk = k_rot.shape
    k_rot = k_rot.view(bk, hk, sk, dk // 2, 2).transpose(4, 3).reshape(bk, hk, sk, dk)
    q_embed = q_rot * c + torch.cat((-q_rot[..., d // 2:], q_rot[..., :d // 2]), dim=-1) * sn
    k_embed = k_rot * c + torch.cat((-k_rot[..., dk // 2:], k_rot[..., :dk // 2]), dim=-1) * sn
    return q_embed, k_embed, q_pass, normed


def replace(x, w_dq, gamma_cq, w_uq_qr, w_dkv_kr, gamma_ckv, w_kv_b, cos, sin, qk_head_dim, eps_cq, eps_ckv):
    b, s, _ = x.shape
    r = cos.shape[-1]
    heads = w_uq_qr.shape[0] // qk_head_dim
    latent_dim = gamma_ckv.shape[-1]
    # the absorb prerequisite: W_UK is the first qk_nope_head_dim rows of each head of kv_b_proj
    w_uk = w_kv_b.view(heads, -1, latent_dim)[:, :qk_head_dim - r]
    # paged caches, block 16, one block per request, token t of request i at slot i * 16 + t
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


def lookalike_half_mode_rope(x, w_dq, gamma_cq, w_uq_qr, w_dkv_kr, gamma_ckv, w_kv_b, cos, sin, qk_head_dim,
                             eps_cq, eps_ckv):
    # rope_interleave false (MiniCPM3): rotate_half straight on the lanes, lane i paired with lane i + d/2
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
    k_rot = k_rot.view(b, 1, s, cos.shape[-1])
    c = cos.unsqueeze(1)
    sn = sin.unsqueeze(1)
    half = cos.shape[-1] // 2
    q_embed = q_rot * c + torch.cat((-q_rot[..., half:], q_rot[..., :half]), dim=-1) * sn
    k_embed = k_rot * c + torch.cat((-k_rot[..., half:], k_rot[..., :half]), dim=-1) * sn
    return q_embed, k_embed


def lookalike_plain_q_proj(x, w_dq, gamma_cq, w_uq_qr, w_dkv_kr, gamma_ckv, w_kv_b, cos, sin, qk_head_dim,
                           eps_cq, eps_ckv, w_q=None):
    # q_lora_rank None (Kimi-Linear): one full-rank q_proj, no query latent and no norm on it
    b, s, _ = x.shape
    q = F.linear(x, w_q).view(b, s, -1, qk_head_dim).transpose(1, 2)
    q_pass, q_rot = torch.split(q, [q.shape[-1] - cos.shape[-1], cos.shape[-1]], dim=-1)
    c = cos[..., :cos.shape[-1] // 2].unsqueeze(1)
    sn = sin[..., :sin.shape[-1] // 2].unsqueeze(1)
    q1 = q_rot[..., 0::2]
    q2 = q_rot[..., 1::2]
    q_embed = torch.cat([q1 * c - q2 * sn, q2 * c + q1 * sn], dim=-1)
    return q_embed
