"""MLA's decode prolog (low-rank query, W_UK absorb, latent key path and both cache writes) becomes `npu_mla_prolog_v3`.

What it does
    Finds the whole query and key preparation of absorbed MLA: the query down
    projection (`q_a_proj`), its RMSNorm, the up projection (`q_b_proj`) viewed per
    head and split into the no-position part (`qk_nope_head_dim`) and the rope part,
    the rope part rotated with DeepSeek's interleaved RoPE, the no-position part folded
    with the key up-projection slice W_UK (`einsum("bshd,hdc->bshc")`); and the key
    path: `kv_a_proj_with_mqa`, split into the latent and the shared rope key, the
    latent normalised into the latent cache and the rotated rope key into the rope-key
    cache at `start_pos .. start_pos + s`. It proposes one
    `torch_npu.npu_mla_prolog_v3` that returns the absorbed query and the rotated query
    part and writes both caches.
Why
    In decode this is about thirty small kernels per layer (three GEMMs, two norms in
    float32, two complex RoPEs with their views, an einsum with its transposes, two
    cache copies) for one token per request; the prolog runs them as one kernel. It is
    the first step of the reference MLA decode chain (prolog, then FIA v2 with
    `query_rope`/`key_rope`, then the V absorb with `npu_transpose_batchmatmul`).
Example
    q = self.wq_b(self.q_norm(self.wq_a(x))).view(bsz, seqlen, self.n_local_heads, self.qk_head_dim)
    q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
    q_pe = apply_rotary_emb(q_pe, freqs_cis)
    q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :self.qk_nope_head_dim])
    kv, k_pe = torch.split(self.wkv_a(x), [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
    self.kv_cache[:bsz, start_pos:end_pos] = self.kv_norm(kv)
    self.pe_cache[:bsz, start_pos:end_pos] = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis).squeeze(2)
Use instead
    q_nope, q_pe = torch_npu.npu_mla_prolog_v3(
        x, self.w_dq, self.w_uq_qr, self.w_uk, self.w_dkv_kr, self.q_norm.weight, self.kv_norm.weight,
        sin, cos, self.kv_cache_paged, self.pe_cache_paged, cache_index=slots,
        rmsnorm_epsilon_cq=self.q_norm.eps, rmsnorm_epsilon_ckv=self.kv_norm.eps, cache_mode="PA_BSND")[:2]
Fix safety
    Needs prerequisites. The operator takes the weights as [in, out] (transposed once at
    load time) and W_UK as [heads, qk_nope_head_dim, kv_lora_rank]; its caches are
    paged (block size a multiple of 16, at most 1024) and addressed by one slot per
    token, which changes how the caches are allocated (not mechanical). Its RoPE reorders
    each rope part to even lanes then odd before rotating, so the rotated query part and
    the rope-key cache are de-interleaved: the numeric check compares them in that order,
    and the attention that reads them must use the same order for both (it does when the
    prefill path writes the cache with `npu_kv_rmsnorm_rope_cache`). The shapes are fixed
    by the operator: hidden size in {1024, 2048, 3072, 4096, 5120, 6144, 7168, 7680, 8192},
    q_lora_rank 1536 or 2048, kv_lora_rank 512, qk_nope_head_dim 128 or 192, rope width
    64, heads per rank a power of two up to 128; the checks evaluate each against the
    config and the TP size. A model without the low-rank query (`q_lora_rank = 0`) or
    without the W_UK absorb is not matched.
References
    catalog/mla/npu_mla_prolog_v3.toml; reference_chains.md (module-attention-mla-absorb,
    decode: prolog); pitfalls.md 4.2.
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "mla.mla_prolog_v3",
    "title": "MLA decode prolog (low-rank query + W_UK absorb + latent key path + cache writes) -> npu_mla_prolog_v3",
    "module": "mla",
    "apis": ["npu_mla_prolog_v3"],
    "stages": ["decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "query_rope_deinterleaved_reader",
         "en": "The rotated query part and the rope-key cache come out de-interleaved (even lanes, then odd): the attention that reads them (FIA with query_rope/key_rope, or the position score) must take both in that order, and the prefill path must fill the rope-key cache the same way (mla.kv_rmsnorm_rope_cache).",
         "zh": "旋转后的query rope部分与rope key缓存均为解交错顺序（先偶数通道后奇数通道）：读取它们的注意力（带query_rope/key_rope的FIA或位置得分）须按此顺序读取，prefill路径也须以同样顺序写rope key缓存（mla.kv_rmsnorm_rope_cache）。",
         "mechanical": False},
        {"id": "paged_latent_cache",
         "en": "Keep the latent and rope-key caches paged, [block_num, block_size, 1, 512] and [block_num, block_size, 1, 64] with block_size a multiple of 16 up to 1024, addressed by one slot id per token (PA_BSND; PA_NZ with the caches cast to FRACTAL_NZ).",
         "zh": "潜在缓存与rope key缓存改为分页：[block_num, block_size, 1, 512]与[block_num, block_size, 1, 64]，block_size为16的倍数且不超过1024，每个token一个slot编号（PA_BSND；PA_NZ时缓存转为FRACTAL_NZ）。",
         "mechanical": False},
        {"id": "prolog_weight_layout",
         "en": "At load time keep the projection weights transposed to [in, out] (q_a_proj, q_b_proj, kv_a_proj_with_mqa; FRACTAL_NZ on the device) and W_UK as [heads, qk_nope_head_dim, kv_lora_rank] from kv_b_proj.",
         "zh": "加载时把投影权重转置为[in, out]（q_a_proj、q_b_proj、kv_a_proj_with_mqa；设备上为FRACTAL_NZ），并从kv_b_proj取出W_UK，形状[头数, qk_nope_head_dim, kv_lora_rank]。",
         "mechanical": True},
        {"id": "deinterleaved_cos_sin",
         "en": "Build real cos/sin tables in the de-interleaved order (cat((freqs.cos(), freqs.cos()), -1)), one row per token, once with the rotary cache instead of the complex freqs_cis.",
         "zh": "随旋转缓存一次性构造解交错顺序的实数cos/sin表（cat((freqs.cos(), freqs.cos()), -1)），每个token一行，替代复数freqs_cis。",
         "mechanical": True},
    ],
    "checks": ["npu_mla_prolog_v3:*"],
    "facts": {"mla": True, "cache_mode": "PA_BSND", "rotary_mode": "interleave"},
    "hints": {"class_names": ["MLA", "DeepseekV3Attention", "MultiHeadLatentAttention"]},
    "inputs": {
        "x": {"shape": ["B", "S", "H"], "dtype": "act"},
        "w_dq": {"shape": ["Q", "H"], "dtype": "act", "scale": 0.03},
        "gamma_cq": {"shape": ["Q"], "dtype": "act", "init": "ones_noise"},
        "w_uq_qr": {"shape": ["N * (D + R)", "Q"], "dtype": "act", "scale": 0.025},
        "w_uk": {"shape": ["N", "D", "C"], "dtype": "act", "scale": 0.09},
        "w_dkv_kr": {"shape": ["C + R", "H"], "dtype": "act", "scale": 0.03},
        "gamma_ckv": {"shape": ["C"], "dtype": "act", "init": "ones_noise"},
        "freqs_cis": {"shape": ["S", "R // 2"], "dtype": "complex64", "init": "unit_complex"},
        "kv_cache": {"shape": ["B + 1", "16 * ((START + S) // 16 + 1)", "C"], "dtype": "act"},
        "pe_cache": {"shape": ["B + 1", "16 * ((START + S) // 16 + 1)", "R"], "dtype": "act", "init": "zeros"},
        "start_pos": {"dtype": "param", "expr": "START"},
        "eps_cq": {"dtype": "param", "value": 1e-6},
        "eps_ckv": {"dtype": "param", "value": 1e-5},
    },
    "sizes": {"B": 2, "S": 1, "H": 1024, "Q": 1536, "N": 2, "D": 128, "C": 512, "R": 64, "START": 3},
    "dtypes": ["float32", "bfloat16"],
    "deinterleaved_returns": [1, 3],
    "min_torch": {"search_f_rms_norm": "2.4"},
    "match": {"contains": ["norm.rms_norm", "rope.rope_interleave_complex", "mla.kv_rmsnorm_rope_cache"],
              "also_outputs": {"c_q": {
                  "en": "call it with query_norm_flag=True and pass its query_norm output (the normalised query latent, [T, q_lora_rank] or [B, S, q_lora_rank]) to that reader, as DeepSeek-V3.2's indexer needs.",
                  "zh": "调用时设query_norm_flag=True，并把其query_norm输出（归一化后的query潜在向量，形状[T, q_lora_rank]或[B, S, q_lora_rank]）交给该读取方，DeepSeek-V3.2的索引器即需如此。"}},
              "lookalikes": {"lookalike_no_absorb": "fixtures/mla_prolog_v3_nomatch_no_absorb.py"}},
    "near_misses": [
        {"file": "fixtures/mla_prolog_v3_nomatch_no_absorb.py",
         "reason": "the query's no-position part is not folded with W_UK (the key is expanded per head instead): the prolog's query output is the absorbed one"},
    ],
    "doc_zh": """MLA解码前处理（低秩query、W_UK吸收、潜在key路径及两次缓存写入）替换为npu_mla_prolog_v3。

功能
    识别吸收式MLA完整的query与key准备：query下投影（q_a_proj）及其RMSNorm、上投影（q_b_proj）
    按头展开后拆为无位置部分（qk_nope_head_dim）与rope部分，rope部分用DeepSeek的交错RoPE旋转，
    无位置部分与key上投影切片W_UK相乘（einsum("bshd,hdc->bshc")）；以及key路径：
    kv_a_proj_with_mqa拆为潜在向量与共享rope key，潜在向量归一化后写入潜在缓存，旋转后的rope key
    写入rope key缓存，位置为start_pos .. start_pos + s。建议改为一次torch_npu.npu_mla_prolog_v3，
    返回吸收后的query与旋转后的query rope部分，并写入两个缓存。
原因
    解码时每层每个请求只有一个token，这段代码却有约三十个小内核（三次GEMM、两次float32归一化、
    两次带视图的复数RoPE、一次带转置的einsum、两次缓存拷贝）；prolog用一个内核完成。它是参考
    MLA解码链的第一步（prolog，之后是带query_rope/key_rope的FIA v2，再之后是用
    npu_transpose_batchmatmul的V吸收）。
示例
    q = self.wq_b(self.q_norm(self.wq_a(x))).view(bsz, seqlen, self.n_local_heads, self.qk_head_dim)
    q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
    q_pe = apply_rotary_emb(q_pe, freqs_cis)
    q_nope = torch.einsum("bshd,hdc->bshc", q_nope, wkv_b[:, :self.qk_nope_head_dim])
    kv, k_pe = torch.split(self.wkv_a(x), [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
    self.kv_cache[:bsz, start_pos:end_pos] = self.kv_norm(kv)
    self.pe_cache[:bsz, start_pos:end_pos] = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis).squeeze(2)
替代写法
    q_nope, q_pe = torch_npu.npu_mla_prolog_v3(
        x, self.w_dq, self.w_uq_qr, self.w_uk, self.w_dkv_kr, self.q_norm.weight, self.kv_norm.weight,
        sin, cos, self.kv_cache_paged, self.pe_cache_paged, cache_index=slots,
        rmsnorm_epsilon_cq=self.q_norm.eps, rmsnorm_epsilon_ckv=self.kv_norm.eps, cache_mode="PA_BSND")[:2]
修复安全性
    需要前置改造。算子要求权重为[in, out]（加载时一次性转置），W_UK为[头数, qk_nope_head_dim,
    kv_lora_rank]；缓存须分页（block大小为16的倍数且不超过1024），每个token一个slot，这会改变缓存
    的分配方式（非机械改造）。其RoPE在旋转前把每个rope部分重排为先偶数后奇数通道，因此旋转后的
    query rope部分与rope key缓存都是解交错顺序：数值检查按此顺序比较，读取它们的注意力也须对两者
    使用同一顺序（prefill路径用npu_kv_rmsnorm_rope_cache写缓存时即如此）。形状由算子固定：隐藏维
    属于{1024, 2048, 3072, 4096, 5120, 6144, 7168, 7680, 8192}，q_lora_rank为1536或2048，
    kv_lora_rank为512，qk_nope_head_dim为128或192，rope宽度为64，每个rank的头数为不超过128的2的幂；
    检查项按配置与TP规模逐项评估。没有低秩query（q_lora_rank = 0）或没有W_UK吸收的模型不匹配。
参考
    catalog/mla/npu_mla_prolog_v3.toml；reference_chains.md（module-attention-mla-absorb，
    解码：prolog）；pitfalls.md 4.2。
""",
}


def search(x, w_dq, gamma_cq, w_uq_qr, w_uk, w_dkv_kr, gamma_ckv, freqs_cis, kv_cache, pe_cache, start_pos, eps_cq, eps_ckv):
    b, s, _ = x.shape
    q_a = F.linear(x, w_dq)
    h = q_a.float()
    c_q = (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps_cq) * gamma_cq).type_as(q_a)
    q = F.linear(c_q, w_uq_qr).reshape(b, s, w_uk.shape[0], -1)
    q_nope, q_pe = torch.split(q, [w_uk.shape[1], pe_cache.shape[-1]], dim=-1)
    q_pairs = torch.view_as_complex(q_pe.float().view(*q_pe.shape[:-1], -1, 2))
    q_rot = torch.view_as_real(q_pairs * freqs_cis.view(1, q_pairs.size(1), 1, q_pairs.size(-1))).flatten(3)
    q_rot = q_rot.to(x.dtype)
    q_latent = torch.einsum("bshd,hdc->bshc", q_nope, w_uk)
    kv = F.linear(x, w_dkv_kr)
    latent, k_pe = torch.split(kv, [kv_cache.shape[-1], pe_cache.shape[-1]], dim=-1)
    k_pe = k_pe.unsqueeze(2)
    k_pairs = torch.view_as_complex(k_pe.float().view(*k_pe.shape[:-1], -1, 2))
    k_rot = torch.view_as_real(k_pairs * freqs_cis.view(1, k_pairs.size(1), 1, k_pairs.size(-1))).flatten(3)
    k_rot = k_rot.to(kv.dtype)
    l32 = latent.float()
    normed = (l32 * torch.rsqrt(l32.pow(2).mean(-1, keepdim=True) + eps_ckv) * gamma_ckv).type_as(latent)
    kv_cache[:b, start_pos:start_pos + s] = normed
    pe_cache[:b, start_pos:start_pos + s] = k_rot.squeeze(2)
    return q_latent, q_rot, kv_cache, pe_cache


def replace(x, w_dq, gamma_cq, w_uq_qr, w_uk, w_dkv_kr, gamma_ckv, freqs_cis, kv_cache, pe_cache, start_pos, eps_cq, eps_ckv):
    b, s, _ = x.shape
    rows, block = kv_cache.shape[0], kv_cache.shape[1]
    cos = torch.cat((freqs_cis.real, freqs_cis.real), dim=-1).to(x.dtype)[None].expand(b, s, -1)
    sin = torch.cat((freqs_cis.imag, freqs_cis.imag), dim=-1).to(x.dtype)[None].expand(b, s, -1)
    slots = torch.arange(b, device=x.device)[:, None] * block + start_pos + torch.arange(s, device=x.device)[None]
    q_latent, q_rot = torch_npu.npu_mla_prolog_v3(
        x, w_dq.t(), w_uq_qr.t(), w_uk, w_dkv_kr.t(), gamma_cq, gamma_ckv, sin, cos,
        kv_cache.view(rows, block, 1, -1), pe_cache.view(rows, block, 1, -1), cache_index=slots.reshape(-1),
        rmsnorm_epsilon_cq=eps_cq, rmsnorm_epsilon_ckv=eps_ckv, cache_mode="PA_BSND")[:2]
    return q_latent, q_rot, kv_cache, pe_cache


def search_f_rms_norm(x, w_dq, gamma_cq, w_uq_qr, w_uk, w_dkv_kr, gamma_ckv, freqs_cis, kv_cache, pe_cache, start_pos,
                      eps_cq, eps_ckv):
    b, s, _ = x.shape
    c_q = F.rms_norm(F.linear(x, w_dq), (w_dq.shape[0],), gamma_cq, eps_cq)
    q = F.linear(c_q, w_uq_qr)
    q = q.view(b, s, w_uk.shape[0], q.shape[-1] // w_uk.shape[0])
    q_nope, q_pe = torch.split(q, [w_uk.shape[1], pe_cache.shape[-1]], dim=-1)
    q_pairs = torch.view_as_complex(q_pe.float().view(*q_pe.shape[:-1], -1, 2))
    q_rot = torch.view_as_real(q_pairs * freqs_cis.view(1, q_pairs.size(1), 1, q_pairs.size(-1))).flatten(3)
    q_rot = q_rot.to(x.dtype)
    q_latent = torch.einsum("bshd,hdc->bshc", q_nope, w_uk)
    kv = F.linear(x, w_dkv_kr)
    latent, k_pe = torch.split(kv, [kv_cache.shape[-1], pe_cache.shape[-1]], dim=-1)
    k_pe = k_pe.unsqueeze(2)
    k_pairs = torch.view_as_complex(k_pe.float().view(*k_pe.shape[:-1], -1, 2))
    k_rot = torch.view_as_real(k_pairs * freqs_cis.view(1, k_pairs.size(1), 1, k_pairs.size(-1))).flatten(3)
    kv_cache[:b, start_pos:start_pos + s] = F.rms_norm(latent, (latent.shape[-1],), gamma_ckv, eps_ckv)
    pe_cache[:b, start_pos:start_pos + s] = k_rot.to(kv.dtype).squeeze(2)
    return q_latent, q_rot, kv_cache, pe_cache


def lookalike_no_absorb(x, w_dq, gamma_cq, w_uq_qr, w_uk, w_dkv_kr, gamma_ckv, freqs_cis, kv_cache, pe_cache,
                        start_pos, eps_cq, eps_ckv):
    # the naive path: the query is the no-position part next to the rotated part, W_UK never meets it
    b, s, _ = x.shape
    q_a = F.linear(x, w_dq)
    h = q_a.float()
    c_q = (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps_cq) * gamma_cq).type_as(q_a)
    q = F.linear(c_q, w_uq_qr).reshape(b, s, w_uk.shape[0], -1)
    q_nope, q_pe = torch.split(q, [w_uk.shape[1], pe_cache.shape[-1]], dim=-1)
    q_pairs = torch.view_as_complex(q_pe.float().view(*q_pe.shape[:-1], -1, 2))
    q_rot = torch.view_as_real(q_pairs * freqs_cis.view(1, q_pairs.size(1), 1, q_pairs.size(-1))).flatten(3)
    return torch.cat((q_nope, q_rot.to(x.dtype)), dim=-1)
