"""Hugging Face MLA key path (kv_a_layernorm on the latent, de-interleaved RoPE on the shared rope key) becomes `npu_kv_rmsnorm_rope_cache`.

What it does
    Finds the key half of DeepSeek-V2/V3-style attention as Hugging Face transformers
    writes it: `kv_a_proj_with_mqa` gives one tensor that is split into the latent
    (width `kv_lora_rank`) and a single rope key for all heads (width
    `qk_rope_head_dim`). The latent goes through `kv_a_layernorm` (an RMSNorm computed
    in float32); the rope key is viewed as one head, `[b, 1, s, d]`, and rotated with
    the interleaved-pair RoPE that `config.rope_interleave` selects: either the even and
    odd lanes rotated by the first half of the cos/sin tables and concatenated, or the
    older spelling that reorders the lanes (`view(b, 1, s, d // 2, 2).transpose(4, 3)`)
    and then applies `rotate_half` with the full tables. Both leave the rotated key with
    the even lanes first, which is the order the operator produces. The rule proposes one
    `torch_npu.npu_kv_rmsnorm_rope_cache(kv, gamma, cos, sin, index, k_cache, ckv_cache,
    cache_mode="Norm")` on the unsplit projection output, writing the normalised latent
    and the rotated rope key straight into latent caches.
Why
    Eagerly this is a split, eight or so element-wise kernels for the float32 norm, the
    slices, multiplies and concatenation of the rotation, and then the cache layer's
    own copies, each one reading the tokens again. The fused operator reads the 576-wide
    projection output once and writes both caches. It is the prefill step of the
    absorbed MLA chain; in decode `npu_mla_prolog_v3` takes the same path in together
    with the query side.
Example
    compressed_kv = self.kv_a_proj_with_mqa(hidden_states)
    kv_nope, k_rot = torch.split(compressed_kv, [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
    kv_nope = self.kv_a_layernorm(kv_nope)
    k_rot = k_rot.view(batch_size, 1, seq_length, self.qk_rope_head_dim)
    q_rot, k_rot = apply_rotary_pos_emb_interleave(q_rot, k_rot, cos, sin)
Use instead
    # latent caches [B, 1, max_len, 512] and [B, 1, max_len, 64]; cos/sin as [B, 1, S, 64]
    index = cache_position.expand(batch_size, -1)
    torch_npu.npu_kv_rmsnorm_rope_cache(compressed_kv.unsqueeze(1), self.kv_a_layernorm.weight,
                                        cos.unsqueeze(1), sin.unsqueeze(1), index,
                                        self.rope_key_cache, self.latent_cache,
                                        epsilon=self.kv_a_layernorm.variance_epsilon, cache_mode="Norm")
Fix safety
    Needs prerequisites, none of them mechanical. The operator writes caches, while the
    Hugging Face code hands the two values to a `Cache` object and then expands the
    latent into per-head keys and values with `kv_b_proj`: the model has to move to
    absorbed MLA, keeping a latent cache and a rope-key cache that the operator fills,
    with `kv_b_proj` folded into the query and output sides (`mla.fia_absorb`,
    `mla.v_absorb_transpose_bmm`). cos/sin must be passed as `[B, 1, S, 64]` and the
    write positions as `index`. Hugging Face's tables are `cat((freqs, freqs), -1)`,
    already the layout the operator's half-mode rotation reads, and its rotation leaves
    the key de-interleaved just as the operator does: the numeric check compares the
    values as they are, without reordering, so the query's rope part needs no change.
    The latent width is fixed at 512 and the rope width at 64, the dtype is bfloat16 or
    float16 and in Norm mode the cache is at least as long as the sequence; the checks
    read these from the config. A rope key rotated with plain `rotate_half`
    (`rope_interleave` false, MiniCPM3) pairs lane i with lane i + 32 and is not
    matched; a rope key rotated as complex pairs (DeepSeek-V2's `freqs_cis`) stays in
    pair order and is not matched either.
References
    catalog/mla/npu_kv_rmsnorm_rope_cache.toml; reference_chains.md
    (module-attention-mla-absorb, prefill); pitfalls.md 4.2; rules/mla/kv_rmsnorm_rope_cache.py
    for the same operator on the reference model's cache writes.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "mla.kv_rmsnorm_rope_hf",
    "title": "HF MLA key path: kv_a_layernorm + de-interleaved rope key -> npu_kv_rmsnorm_rope_cache into latent caches",
    "module": "mla",
    "apis": ["npu_kv_rmsnorm_rope_cache"],
    "stages": ["prefill"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "absorbed_latent_cache",
         "en": "Move the attention to absorbed MLA: keep a latent cache [B, 1, max_len, kv_lora_rank] and a rope-key cache [B, 1, max_len, qk_rope_head_dim] that the operator writes, instead of handing kv_nope/k_rot to the Cache object and expanding them per head with kv_b_proj; fold kv_b_proj's key half into the query and its value half into the output side (see mla.fia_absorb and mla.v_absorb_transpose_bmm).",
         "zh": "把注意力改为吸收式MLA：保留由算子写入的潜在缓存[B, 1, max_len, kv_lora_rank]与rope key缓存[B, 1, max_len, qk_rope_head_dim]，不再把kv_nope/k_rot交给Cache对象并用kv_b_proj逐头展开；把kv_b_proj的key部分并入query侧、value部分并入输出侧（见mla.fia_absorb与mla.v_absorb_transpose_bmm）。",
         "mechanical": False},
        {"id": "cos_sin_bnsd",
         "en": "Pass cos/sin as [B, 1, S, 64] (unsqueeze(1) of the [B, S, 64] tables the rotary embedding returns); the cat((freqs, freqs), -1) tables are already the layout the operator reads.",
         "zh": "cos/sin以[B, 1, S, 64]传入（对旋转编码返回的[B, S, 64]表做unsqueeze(1)）；cat((freqs, freqs), -1)形式的表已是算子读取的布局。",
         "mechanical": False},
        {"id": "cache_write_index",
         "en": "Give the operator the write positions as index [B, S] (cache_position expanded over the batch, int64) and size both caches for the longest sequence.",
         "zh": "以index [B, S]（按batch展开的cache_position，int64）向算子提供写入位置，并按最长序列分配两个缓存。",
         "mechanical": False},
    ],
    "checks": ["npu_kv_rmsnorm_rope_cache:*"],
    "facts": {"mla": True, "cache_mode": "Norm", "rotary_mode": "interleave"},
    "hints": {"class_names": ["DeepseekV3Attention", "DeepseekV32Attention", "Glm4MoeLiteAttention",
                              "LongcatFlashMLA", "GlmMoeDsaAttention"]},
    "inputs": {
        "kv": {"shape": ["B", "S", "C + R"], "dtype": "act"},
        "gamma": {"shape": ["C"], "dtype": "act", "init": "ones_noise"},
        "cos": {"shape": ["B", "S", "R"], "dtype": "act", "init": "half_repeated"},
        "sin": {"shape": ["B", "S", "R"], "dtype": "act", "init": "half_repeated"},
        "eps": {"dtype": "param", "value": 1e-6},
    },
    "sizes": {"B": 2, "S": 5, "C": 512, "R": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"contains": ["norm.rms_norm", "rope.rope_deinterleave_half"],
              "lookalikes": {
                  "lookalike_half_mode_rope": "fixtures/kv_rmsnorm_rope_hf_nomatch_half_mode_rope.py",
                  "lookalike_complex_pairs": {
                      "near_miss": "fixtures/kv_rmsnorm_rope_hf_nomatch_complex_pairs.py",
                      "inputs": {"freqs_cis": {"shape": ["B", "S", "R // 2"], "dtype": "complex64",
                                               "init": "unit_complex"}}}}},
    "near_misses": [
        {"file": "fixtures/kv_rmsnorm_rope_hf_nomatch_half_mode_rope.py",
         "reason": "the rope key is rotated with plain rotate_half (no even/odd reorder, rope_interleave false): the operator reorders the lanes first and would rotate it differently"},
        {"file": "fixtures/kv_rmsnorm_rope_hf_nomatch_complex_pairs.py",
         "reason": "the rope key is rotated as complex pairs and stays in pair order: the operator returns it de-interleaved, see mla.kv_rmsnorm_rope_cache for that form"},
    ],
    "doc_zh": """Hugging Face写法的MLA key路径（潜在向量上的kv_a_layernorm、共享rope key的解交错RoPE）替换为npu_kv_rmsnorm_rope_cache。

功能
    识别Hugging Face transformers中DeepSeek-V2/V3类注意力的key部分：kv_a_proj_with_mqa输出一个张量，
    拆为潜在向量（宽度kv_lora_rank）和所有头共用的一个rope key（宽度qk_rope_head_dim）。潜在向量经过
    kv_a_layernorm（float32计算的RMSNorm）；rope key被视为单头[b, 1, s, d]，并按config.rope_interleave
    选择的交错成对RoPE旋转：或者用cos/sin表的前一半分别旋转偶数通道与奇数通道后拼接，或者用较早的
    写法先重排通道（view(b, 1, s, d // 2, 2).transpose(4, 3)）再用完整的表做rotate_half。两种写法得到
    的旋转结果都是偶数通道在前，与算子输出的顺序一致。规则建议在未拆分的投影输出上改为一次
    torch_npu.npu_kv_rmsnorm_rope_cache(kv, gamma, cos, sin, index, k_cache, ckv_cache,
    cache_mode="Norm")，把归一化后的潜在向量和旋转后的rope key直接写入潜在缓存。
原因
    逐算子执行时包括一次拆分、float32归一化的约八个逐元素内核、旋转中的切片、乘法与拼接，以及缓存
    层自身的拷贝，每一步都再次读取token。融合算子只读一次576维投影输出并写入两个缓存。它是吸收式
    MLA链的prefill步骤；decode阶段由npu_mla_prolog_v3连同query侧一起完成同一路径。
示例
    compressed_kv = self.kv_a_proj_with_mqa(hidden_states)
    kv_nope, k_rot = torch.split(compressed_kv, [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
    kv_nope = self.kv_a_layernorm(kv_nope)
    k_rot = k_rot.view(batch_size, 1, seq_length, self.qk_rope_head_dim)
    q_rot, k_rot = apply_rotary_pos_emb_interleave(q_rot, k_rot, cos, sin)
替代写法
    # 潜在缓存[B, 1, max_len, 512]与[B, 1, max_len, 64]；cos/sin为[B, 1, S, 64]
    index = cache_position.expand(batch_size, -1)
    torch_npu.npu_kv_rmsnorm_rope_cache(compressed_kv.unsqueeze(1), self.kv_a_layernorm.weight,
                                        cos.unsqueeze(1), sin.unsqueeze(1), index,
                                        self.rope_key_cache, self.latent_cache,
                                        epsilon=self.kv_a_layernorm.variance_epsilon, cache_mode="Norm")
修复安全性
    需要前置改造，且都不是机械改写。算子直接写缓存，而Hugging Face代码把这两个值交给Cache对象，
    再用kv_b_proj把潜在向量展开为逐头的key与value：模型须改为吸收式MLA，保留由算子写入的潜在缓存与
    rope key缓存，并把kv_b_proj并入query侧与输出侧（mla.fia_absorb、mla.v_absorb_transpose_bmm）。
    cos/sin须以[B, 1, S, 64]传入，写入位置以index传入。Hugging Face的表为cat((freqs, freqs), -1)，
    已是算子half模式旋转读取的布局；其旋转结果与算子一样为解交错顺序：数值检查直接比较，不做重排，
    因此query的rope部分无需改动。潜在宽度固定为512，rope宽度固定为64，类型为bfloat16或float16，
    Norm模式下缓存长度不小于序列长度；检查项从配置读取这些值。用普通rotate_half旋转的rope key
    （rope_interleave为false，如MiniCPM3）把通道i与通道i + 32配对，不匹配；按复数成对旋转的rope key
    （DeepSeek-V2的freqs_cis）保持成对顺序，同样不匹配。
参考
    catalog/mla/npu_kv_rmsnorm_rope_cache.toml；reference_chains.md
    （module-attention-mla-absorb，prefill）；pitfalls.md 4.2；同一算子用于参考模型缓存写入的写法见
    rules/mla/kv_rmsnorm_rope_cache.py。
""",
}


def search(kv, gamma, cos, sin, eps):
    # transformers 5.x: even and odd lanes rotated by the first half of the tables
    b, s, _ = kv.shape
    latent, k_rot = torch.split(kv, [gamma.shape[-1], cos.shape[-1]], dim=-1)
    input_dtype = latent.dtype
    h = latent.to(torch.float32)
    variance = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(variance + eps)
    normed = gamma * h.to(input_dtype)
    k_rot = k_rot.view(b, 1, s, k_rot.shape[-1])
    c = cos[..., :cos.shape[-1] // 2].unsqueeze(1)
    sn = sin[..., :sin.shape[-1] // 2].unsqueeze(1)
    k1 = k_rot[..., 0::2]
    k2 = k_rot[..., 1::2]
    k_embed = torch.cat([k1 * c - k2 * sn, k2 * c + k1 * sn], dim=-1)
    return normed, k_embed


def search_reorder_rotate_half(kv, gamma, cos, sin, eps):
    # transformers 4.x: reorder the lanes to even-then-odd, then rotate_half with the full tables
    b, s, _ = kv.shape
    latent, k_rot = torch.split(kv, [gamma.shape[-1], cos.shape[-1]], dim=-1)
    input_dtype = latent.dtype
    h = latent.to(torch.float32)
    variance = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(variance + eps)
    normed = gamma * h.to(input_dtype)
    c = cos.unsqueeze(1)
    sn = sin.unsqueeze(1)
    d = cos.shape[-1]
    k_rot = k_rot.view(b, 1, s, d // 2, 2).transpose(4, 3).reshape(b, 1, s, d)
    k1 = k_rot[..., :d // 2]
    k2 = k_rot[..., d // 2:]
    k_embed = k_rot * c + torch.cat((-k2, k1), dim=-1) * sn
    return normed, k_embed


def lookalike_half_mode_rope(kv, gamma, cos, sin, eps):
    # the rope key alone; rope_interleave false: rotate_half straight on the lanes,
    # lane i paired with lane i + d/2
    b, s, _ = kv.shape
    latent, k_rot = torch.split(kv, [gamma.shape[-1], cos.shape[-1]], dim=-1)
    k_rot = k_rot.view(b, 1, s, k_rot.shape[-1])
    c = cos.unsqueeze(1)
    sn = sin.unsqueeze(1)
    half = k_rot.shape[-1] // 2
    k_embed = k_rot * c + torch.cat((-k_rot[..., half:], k_rot[..., :half]), dim=-1) * sn
    return k_embed


def lookalike_complex_pairs(kv, gamma, cos, sin, eps, freqs_cis=None):
    # the rope key alone; DeepSeek-V2 in transformers: complex multiply, the result stays in pair order
    b, s, _ = kv.shape
    latent, k_rot = torch.split(kv, [gamma.shape[-1], cos.shape[-1]], dim=-1)
    k_rot = k_rot.view(b, 1, s, k_rot.shape[-1])
    pairs = torch.view_as_complex(k_rot.float().reshape(*k_rot.shape[:-1], -1, 2))
    k_embed = torch.view_as_real(pairs * freqs_cis.unsqueeze(1)).flatten(3).type_as(k_rot)
    return k_embed


def replace(kv, gamma, cos, sin, eps):
    b, s, _ = kv.shape
    # Norm mode writes caches and returns no outputs: caches exactly S long, filled at 0 .. S-1
    index = torch.arange(s, device=kv.device).expand(b, s).contiguous()
    k_cache = kv.new_zeros(b, 1, s, cos.shape[-1])
    ckv_cache = kv.new_zeros(b, 1, s, gamma.shape[-1])
    torch_npu.npu_kv_rmsnorm_rope_cache(kv.unsqueeze(1), gamma, cos.unsqueeze(1), sin.unsqueeze(1), index,
                                        k_cache, ckv_cache, epsilon=eps, cache_mode="Norm")
    return ckv_cache.squeeze(1), k_cache


def naive_pair_repeated_tables(kv, gamma, cos, sin, eps):
    # tables repeated lane by lane (npu_rotary_mul's interleave layout): the operator rotates the
    # de-interleaved key with them, so each lane meets another lane's angle
    b, s, _ = kv.shape
    index = torch.arange(s, device=kv.device).expand(b, s).contiguous()
    k_cache = kv.new_zeros(b, 1, s, cos.shape[-1])
    ckv_cache = kv.new_zeros(b, 1, s, gamma.shape[-1])
    half = cos.shape[-1] // 2
    c = cos[..., :half].repeat_interleave(2, dim=-1).unsqueeze(1)
    sn = sin[..., :half].repeat_interleave(2, dim=-1).unsqueeze(1)
    torch_npu.npu_kv_rmsnorm_rope_cache(kv.unsqueeze(1), gamma, c, sn, index, k_cache, ckv_cache,
                                        epsilon=eps, cache_mode="Norm")
    return ckv_cache.squeeze(1), k_cache
