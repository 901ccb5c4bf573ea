"""Hugging Face MLA's query and key preparation with DeepSeek-V2's complex-pair RoPE (`freqs_cis`) becomes `npu_mla_prolog_v3` in decode, once W_UK and W_UV are absorbed.

What it does
    Finds the multi-head latent attention prolog as the Hugging Face DeepSeek-V2 file
    writes it: the query goes down through `q_a_proj`, is normalised by `q_a_layernorm`
    (RMSNorm in float32), goes up through `q_b_proj`, is viewed per head, transposed to
    [b, heads, s, d] and split into the part without position (`q_pass`) and the rope
    part; `kv_a_proj_with_mqa` is split into the latent, normalised by
    `kv_a_layernorm`, and the one rope key all heads share, viewed as [b, 1, s, d]. Both
    rope parts are rotated as complex pairs: `view_as_complex` of the lanes taken two by
    two, multiplied by the complex `freqs_cis`, `view_as_real(...).flatten(3)`. It
    proposes one `torch_npu.npu_mla_prolog_v3` that returns the query already folded
    with W_UK and the rotated query part, and writes the normalised latent and the
    rotated rope key into paged caches.
Why
    In decode each layer runs this as about thirty small kernels for one token per
    request: three GEMMs, two RMSNorms of eight element-wise kernels each, the views and
    transposes, two complex RoPEs with their casts; the operator runs them as one
    kernel, and it is what makes the absorbed MLA decode chain possible (FIA over the
    latent cache, then the V absorb).
Example
    q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(hidden_states)))
    q = q.view(query_shape).transpose(1, 2)
    q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
    kv_nope, k_pe = torch.split(self.kv_a_proj_with_mqa(hidden_states), [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
    k_nope = self.kv_a_layernorm(kv_nope).view(batch_size, 1, seq_length, self.kv_lora_rank)
    k_pe = k_pe.view(batch_size, 1, seq_length, self.qk_rope_head_dim)
    q_pe, k_pe = apply_rotary_emb(q_pe, k_pe, freqs_cis)  # view_as_complex * freqs_cis
Use instead
    # once: W_UK = kv_b_proj.weight.view(heads, nope + v, kv_lora_rank)[:, :nope];
    # cos = cat((freqs_cis.real,) * 2, -1), sin = cat((freqs_cis.imag,) * 2, -1)
    q_latent, q_rope = torch_npu.npu_mla_prolog_v3(
        hidden_states, self.w_dq, self.w_uq_qr, self.w_uk, self.w_dkv_kr,
        self.q_a_layernorm.weight, self.kv_a_layernorm.weight, sin, cos,
        self.latent_cache, self.rope_key_cache, cache_index=slot_mapping,
        rmsnorm_epsilon_cq=self.q_a_layernorm.variance_epsilon,
        rmsnorm_epsilon_ckv=self.kv_a_layernorm.variance_epsilon, cache_mode="PA_BSND")[:2]
Fix safety
    Needs prerequisites, several not mechanical. The absorb is the same as for
    mla.mla_prolog_hf: the operator returns q_pass times W_UK (W_UK being `kv_b_proj.weight`
    viewed [heads, nope + v, kv_lora_rank] cut to its first `nope` rows per head), so the
    attention must be rewritten to absorbed MLA over latent and rope-key caches with W_UV
    after it. The rotation itself is the same: a complex pair (x[2i], x[2i+1]) times
    cos + i sin is the interleaved RoPE, which the operator computes by taking the even
    lanes, then the odd ones, and rotating them with the de-interleaved tables. Its
    outputs therefore hold the rotated lanes in that de-interleaved order (real parts,
    then imaginary parts), where the model's `view_as_real(...).flatten` keeps them in
    pair order: the numeric check reorders the search's query and key rope parts the
    same way before comparing (`deinterleaved_returns`), and every reader of them must
    use that order; for the attention that is free, since the query and key rope parts
    are reordered alike and their dot product does not change. The cos/sin tables come
    from `freqs_cis` (its real and imaginary parts, each repeated along the last axis).
    The shapes are fixed by the operator (hidden size from a fixed set, q_lora_rank 1536
    or 2048, kv_lora_rank 512, qk_nope_head_dim 128 or 192, rope width 64, heads per rank
    a power of two up to 128); the checks evaluate each against the config. Not matched:
    a model with a plain `q_proj` (DeepSeek-V2-Lite's `q_lora_rank` None), and the
    rotate_half forms (mla.mla_prolog_hf).
References
    catalog/mla/npu_mla_prolog_v3.toml; reference_chains.md (module-attention-mla-absorb,
    decode: prolog); rules/mla/mla_prolog_hf.py (the same prolog with the interleaved
    rotate_half RoPE); rules/mla/mla_prolog_v3.py (the absorbed form with complex pairs).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "mla.mla_prolog_hf_complex",
    "title": "HF MLA decode prolog with complex-pair RoPE (DeepSeek-V2 freqs_cis) -> npu_mla_prolog_v3 after the W_UK/W_UV absorb",
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
        {"id": "cos_sin_from_freqs_cis",
         "en": "Build the operator's cos/sin tables from the complex freqs_cis the rotary embedding returns: cos = cat((freqs_cis.real, freqs_cis.real), -1), sin = cat((freqs_cis.imag, freqs_cis.imag), -1), one row per token ([T, 64] or [B, S, 64]) in the activation dtype.",
         "zh": "由旋转编码返回的复数freqs_cis构造算子的cos/sin表：cos = cat((freqs_cis.real, freqs_cis.real), -1)，sin = cat((freqs_cis.imag, freqs_cis.imag), -1)，每个token一行（[T, 64]或[B, S, 64]），数据类型同激活。",
         "mechanical": False},
        {"id": "rope_deinterleaved_readers",
         "en": "The operator returns the rotated query part and writes the rope key with their lanes de-interleaved (the real parts of the pairs, then the imaginary parts), where the complex multiply leaves them in pair order: the attention that reads both (q_rope . k_rope is the same dot product when both are reordered alike) and the prefill path filling the rope-key cache must use that order.",
         "zh": "算子返回的旋转后query rope部分及写入的rope key通道为解交错顺序（先各对的实部，再虚部），而复数乘法的结果保持成对顺序：读取两者的注意力（两者按同一方式重排时q_rope · k_rope的点积不变）以及写rope key缓存的prefill路径都须使用该顺序。",
         "mechanical": False},
    ],
    "checks": ["npu_mla_prolog_v3:*"],
    "facts": {"mla": True, "cache_mode": "PA_BSND", "rotary_mode": "interleave"},
    "hints": {"class_names": ["DeepseekV2Attention"]},
    "inputs": {
        "x": {"shape": ["B", "S", "H"], "dtype": "act"},
        "w_dq": {"shape": ["Q", "H"], "dtype": "act", "scale": 0.03},
        "gamma_cq": {"shape": ["Q"], "dtype": "act", "init": "ones_noise"},
        "w_uq_qr": {"shape": ["N * (D + R)", "Q"], "dtype": "act", "scale": 0.025},
        "w_dkv_kr": {"shape": ["C + R", "H"], "dtype": "act", "scale": 0.03},
        "gamma_ckv": {"shape": ["C"], "dtype": "act", "init": "ones_noise"},
        "w_kv_b": {"shape": ["N * (D + V)", "C"], "dtype": "act", "scale": 0.09},
        "freqs_cis": {"shape": ["B", "S", "R // 2"], "dtype": "complex64", "init": "unit_complex"},
        "qk_head_dim": {"dtype": "param", "expr": "D + R"},
        "eps_cq": {"dtype": "param", "value": 1e-6},
        "eps_ckv": {"dtype": "param", "value": 1e-5},
    },
    "sizes": {"B": 2, "S": 1, "H": 1024, "Q": 1536, "N": 2, "D": 128, "V": 128, "C": 512, "R": 64},
    "dtypes": ["float32", "bfloat16"],
    "deinterleaved_returns": [0, 1],
    "absorbed_returns": {"2": {"weight": "w_kv_b", "head_axis": 1}},
    "match": {"contains": ["norm.rms_norm", "rope.rope_interleave_complex"],
              "anchor_uses": [{"anchor": 2, "allow": ["cat", "return"]}],
              "also_outputs": {"c_q": {
                  "en": "call it with query_norm_flag=True and pass its query_norm output (the normalised query latent, [T, q_lora_rank] or [B, S, q_lora_rank]) to that reader.",
                  "zh": "调用时设query_norm_flag=True，并把其query_norm输出（归一化后的query潜在向量，形状[T, q_lora_rank]或[B, S, q_lora_rank]）交给该读取方。"}},
              "lookalikes": {
                  "lookalike_plain_q_proj": {
                      "near_miss": "fixtures/mla_prolog_hf_complex_nomatch_plain_q_proj.py",
                      "inputs": {"w_q": {"shape": ["N * (D + R)", "H"], "dtype": "float32", "scale": 0.03}}}}},
    "near_misses": [
        {"file": "fixtures/mla_prolog_hf_complex_nomatch_plain_q_proj.py",
         "reason": "the query comes from one q_proj (q_lora_rank None): the prolog needs the low-rank query, q_a_proj with its RMSNorm and q_b_proj"},
    ],
    "doc_zh": """Hugging Face写法、采用DeepSeek-V2复数成对RoPE（freqs_cis）的MLA query与key准备，在吸收W_UK与W_UV之后，于decode阶段替换为npu_mla_prolog_v3。

功能
    识别Hugging Face DeepSeek-V2文件中多头潜在注意力的前处理：query经q_a_proj下投影，经
    q_a_layernorm（float32计算的RMSNorm）归一化，再经q_b_proj上投影，按头展开并转置为
    [b, 头数, s, d]，拆为无位置部分（q_pass）与rope部分；kv_a_proj_with_mqa的输出拆为潜在向量
    （经kv_a_layernorm归一化）和所有头共用的一个rope key（视为[b, 1, s, d]）。两个rope部分都按复数
    成对旋转：两两取通道做view_as_complex，乘以复数freqs_cis，再view_as_real(...).flatten(3)。
    建议改为一次torch_npu.npu_mla_prolog_v3：它返回已与W_UK相乘的query和旋转后的query rope部分，
    并把归一化的潜在向量与旋转后的rope key写入分页缓存。
原因
    decode时每层每个请求只有一个token，这段代码却有约三十个小内核：三次GEMM、两次各含八个逐元素
    内核的RMSNorm、视图与转置、两次带类型转换的复数RoPE；算子用一个内核完成，也是吸收式MLA decode链
    （在潜在缓存上做FIA，再做V吸收）的前提。
示例
    q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(hidden_states)))
    q = q.view(query_shape).transpose(1, 2)
    q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
    kv_nope, k_pe = torch.split(self.kv_a_proj_with_mqa(hidden_states), [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
    k_nope = self.kv_a_layernorm(kv_nope).view(batch_size, 1, seq_length, self.kv_lora_rank)
    k_pe = k_pe.view(batch_size, 1, seq_length, self.qk_rope_head_dim)
    q_pe, k_pe = apply_rotary_emb(q_pe, k_pe, freqs_cis)  # view_as_complex * freqs_cis
替代写法
    # 一次性准备：W_UK = kv_b_proj.weight.view(头数, nope + v, kv_lora_rank)[:, :nope]；
    # cos = cat((freqs_cis.real,) * 2, -1)，sin = cat((freqs_cis.imag,) * 2, -1)
    q_latent, q_rope = torch_npu.npu_mla_prolog_v3(
        hidden_states, self.w_dq, self.w_uq_qr, self.w_uk, self.w_dkv_kr,
        self.q_a_layernorm.weight, self.kv_a_layernorm.weight, sin, cos,
        self.latent_cache, self.rope_key_cache, cache_index=slot_mapping,
        rmsnorm_epsilon_cq=self.q_a_layernorm.variance_epsilon,
        rmsnorm_epsilon_ckv=self.kv_a_layernorm.variance_epsilon, cache_mode="PA_BSND")[:2]
修复安全性
    需要前置改造，其中多项不是机械改写。吸收与mla.mla_prolog_hf相同：算子返回q_pass乘W_UK
    （W_UK为kv_b_proj.weight视为[头数, nope + v, kv_lora_rank]后每头取前nope行），因此注意力须改写
    为在潜在缓存与rope key缓存上的吸收式MLA，之后再乘W_UV。旋转本身相同：复数对(x[2i], x[2i+1])
    乘cos + i sin即交错RoPE，算子先取偶数通道、再取奇数通道，并用解交错的表旋转。因此算子输出中
    旋转后的通道为解交错顺序（先实部、后虚部），而模型的view_as_real(...).flatten保持成对顺序：
    数值检查在比较前按同一方式重排search返回的query与key的rope部分（deinterleaved_returns），且
    它们的每个读取方都须使用该顺序；对注意力而言这不需要任何改动，因为query与key的rope部分按同一
    方式重排，点积不变。cos/sin表由freqs_cis得到（实部与虚部各自沿最后一维重复一次）。形状由算子
    固定（隐藏维属于固定集合，q_lora_rank为1536或2048，kv_lora_rank为512，qk_nope_head_dim为128
    或192，rope宽度为64，每个rank的头数为不超过128的2的幂）；检查项按配置逐项评估。不匹配的情形：
    只有一个q_proj的模型（DeepSeek-V2-Lite的q_lora_rank为None），以及rotate_half写法
    （mla.mla_prolog_hf）。
参考
    catalog/mla/npu_mla_prolog_v3.toml；reference_chains.md（module-attention-mla-absorb，
    解码：prolog）；rules/mla/mla_prolog_hf.py（交错rotate_half RoPE的同一前处理）；
    rules/mla/mla_prolog_v3.py（复数成对的吸收写法）。
""",
}


def search(x, w_dq, gamma_cq, w_uq_qr, w_dkv_kr, gamma_ckv, w_kv_b, freqs_cis, qk_head_dim, eps_cq, eps_ckv):
    b, s, _ = x.shape
    q_a = F.linear(x, w_dq)
    input_dtype = q_a.dtype
    h = q_a.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps_cq)
    c_q = gamma_cq * h.to(input_dtype)
    q = F.linear(c_q, w_uq_qr).view(b, s, -1, qk_head_dim).transpose(1, 2)
    rope = 2 * freqs_cis.shape[-1]
    q_pass, q_rot = torch.split(q, [q.shape[-1] - rope, rope], dim=-1)
    kv = F.linear(x, w_dkv_kr)
    latent, k_rot = torch.split(kv, [gamma_ckv.shape[-1], rope], dim=-1)
    latent_dtype = latent.dtype
    l32 = latent.to(torch.float32)
    l32 = l32 * torch.rsqrt(l32.pow(2).mean(-1, keepdim=True) + eps_ckv)
    normed = gamma_ckv * l32.to(latent_dtype)
    k_rot = k_rot.view(b, 1, s, rope)
    q_pairs = torch.view_as_complex(q_rot.float().reshape(*q_rot.shape[:-1], -1, 2))
    k_pairs = torch.view_as_complex(k_rot.float().reshape(*k_rot.shape[:-1], -1, 2))
    rot = freqs_cis.unsqueeze(1)
    q_embed = torch.view_as_real(q_pairs * rot).flatten(3).type_as(q_rot)
    k_embed = torch.view_as_real(k_pairs * rot).flatten(3).type_as(k_rot)
    return q_embed, k_embed, q_pass, normed


def replace(x, w_dq, gamma_cq, w_uq_qr, w_dkv_kr, gamma_ckv, w_kv_b, freqs_cis, qk_head_dim, eps_cq, eps_ckv):
    b, s, _ = x.shape
    # the cos/sin prerequisite: the de-interleaved tables the operator reads
    cos = torch.cat([freqs_cis.real, freqs_cis.real], dim=-1).to(x.dtype)
    sin = torch.cat([freqs_cis.imag, freqs_cis.imag], dim=-1).to(x.dtype)
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


def lookalike_plain_q_proj(x, w_dq, gamma_cq, w_uq_qr, w_dkv_kr, gamma_ckv, w_kv_b, freqs_cis, qk_head_dim,
                           eps_cq, eps_ckv, w_q=None):
    # q_lora_rank None (DeepSeek-V2-Lite): one full-rank q_proj, no query latent and no norm on it
    b, s, _ = x.shape
    q = F.linear(x, w_q).view(b, s, -1, qk_head_dim).transpose(1, 2)
    rope = 2 * freqs_cis.shape[-1]
    q_pass, q_rot = torch.split(q, [q.shape[-1] - rope, rope], dim=-1)
    q_pairs = torch.view_as_complex(q_rot.float().reshape(*q_rot.shape[:-1], -1, 2))
    q_embed = torch.view_as_real(q_pairs * freqs_cis.unsqueeze(1)).flatten(3).type_as(q_rot)
    return q_embed


def naive_pair_order(x, w_dq, gamma_cq, w_uq_qr, w_dkv_kr, gamma_ckv, w_kv_b, freqs_cis, qk_head_dim, eps_cq, eps_ckv):
    # The tables built in pair order (each frequency twice in a row, as the complex
    # multiply reads them) instead of de-interleaved: the operator pairs lane i with i + d/2.
    b, s, _ = x.shape
    cos = torch.repeat_interleave(freqs_cis.real, 2, dim=-1).to(x.dtype)
    sin = torch.repeat_interleave(freqs_cis.imag, 2, dim=-1).to(x.dtype)
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
