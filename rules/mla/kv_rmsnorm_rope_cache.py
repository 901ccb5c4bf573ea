"""MLA's key path (latent RMSNorm, interleaved RoPE of the shared rope key, both cache writes) becomes `npu_kv_rmsnorm_rope_cache`.

What it does
    Finds the absorbed-MLA key path after `kv_a_proj_with_mqa`: the projection output
    is split into the compressed latent (width `kv_lora_rank`) and the one rope key
    shared by all heads (width `qk_rope_head_dim`); the latent is RMS-normalised and
    written to the latent cache, the rope key is rotated with DeepSeek's interleaved
    (complex-pair) RoPE and written to the rope-key cache, both at the positions
    `start_pos .. start_pos + s`. It proposes one
    `torch_npu.npu_kv_rmsnorm_rope_cache(kv, gamma, cos, sin, index, k_cache,
    ckv_cache, cache_mode="Norm")` on the unsplit projection output.
Why
    The path is a split, a norm in float32, a complex multiply with its views and two
    strided cache copies, each a kernel launch reading and writing the tokens again.
    The fused operator reads the 576-wide projection output once and writes both caches.
    It is the prefill step of the reference MLA chain (with `npu_interleave_rope` for
    the query and FIA with `query_rope`/`key_rope`); decode uses `npu_mla_prolog_v3`,
    which covers the same path.
Example
    kv, k_pe = torch.split(self.wkv_a(x), [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
    k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis)
    self.kv_cache[:bsz, start_pos:end_pos] = self.kv_norm(kv)
    self.pe_cache[:bsz, start_pos:end_pos] = k_pe.squeeze(2)
Use instead
    # cos/sin in the de-interleaved order: cat((freqs.cos(), freqs.cos()), -1), [B, 1, S, 64]
    index = torch.arange(start_pos, end_pos).expand(bsz, -1)
    torch_npu.npu_kv_rmsnorm_rope_cache(self.wkv_a(x).unsqueeze(1), self.kv_norm.weight, cos, sin, index,
                                        self.pe_cache.unsqueeze(1), self.kv_cache.unsqueeze(1),
                                        epsilon=self.kv_norm.eps, cache_mode="Norm")
Fix safety
    Needs prerequisites. The operator de-interleaves the rope key before rotating it
    (even lanes, then odd), so the rope-key cache holds the rotated key in that order,
    not in the model's pair order: the numeric check compares it after the same
    reorder. Scores stay the same only when the query's rope part is rotated the same
    way (`npu_interleave_rope` with the same cos/sin), which changes the query path too
    and is therefore a manual step; every other reader of the rope-key cache must expect
    that order. The latent part is fixed at 512 and the rope part at 64, the dtype is
    bfloat16 or float16, and in Norm mode the cache is at least as long as the sequence;
    the checks evaluate them against the config. A rope key rotated in half mode (no
    pair reorder) is a different rotation and is not matched.
References
    catalog/mla/npu_kv_rmsnorm_rope_cache.toml; reference_chains.md
    (module-attention-mla-absorb, prefill); pitfalls.md 4.2.
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "mla.kv_rmsnorm_rope_cache",
    "title": "MLA latent RMSNorm + interleaved rope key + both cache writes -> npu_kv_rmsnorm_rope_cache",
    "module": "mla",
    "apis": ["npu_kv_rmsnorm_rope_cache"],
    "stages": ["prefill"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "query_rope_deinterleaved",
         "en": "The rope-key cache now holds the rotated key de-interleaved (even lanes, then odd): rotate the query's rope part with npu_interleave_rope (same cos/sin) so the position scores are unchanged, and make every other reader of the rope-key cache expect that order.",
         "zh": "rope key缓存中的旋转结果改为解交错顺序（先偶数通道后奇数通道）：query的rope部分须用npu_interleave_rope（同一cos/sin）旋转，位置得分才不变；读取该缓存的其他代码也须按此顺序读取。",
         "mechanical": False},
        {"id": "deinterleaved_cos_sin",
         "en": "Build real cos/sin tables in the de-interleaved order (cat((freqs.cos(), freqs.cos()), -1)), shaped [B, 1, S, 64], once with the rotary cache instead of the complex freqs_cis.",
         "zh": "随旋转缓存一次性构造解交错顺序的实数cos/sin表（cat((freqs.cos(), freqs.cos()), -1)），形状[B, 1, S, 64]，替代复数freqs_cis。",
         "mechanical": True},
    ],
    "checks": ["npu_kv_rmsnorm_rope_cache:*"],
    "facts": {"mla": True, "cache_mode": "Norm", "rotary_mode": "interleave"},
    "hints": {"class_names": ["MLA", "DeepseekV3Attention", "MultiHeadLatentAttention"]},
    "inputs": {
        "kv": {"shape": ["B", "S", "C + R"], "dtype": "act"},
        "gamma": {"shape": ["C"], "dtype": "act", "init": "ones_noise"},
        "freqs_cis": {"shape": ["S", "R // 2"], "dtype": "complex64", "init": "unit_complex"},
        "kv_cache": {"shape": ["B + 1", "START + S + 2", "C"], "dtype": "act"},
        "pe_cache": {"shape": ["B + 1", "START + S + 2", "R"], "dtype": "act", "init": "zeros"},
        "start_pos": {"dtype": "param", "expr": "START"},
        "eps": {"dtype": "param", "value": 1e-6},
    },
    "sizes": {"B": 2, "S": 3, "C": 512, "R": 64, "START": 2},
    "dtypes": ["float32", "bfloat16"],
    "deinterleaved_returns": [1],
    "min_torch": {"search_f_rms_norm": "2.4"},
    "match": {"contains": ["norm.rms_norm", "rope.rope_interleave_complex"],
              "also_outputs": {
                  "normed": {
                      "en": "with a paged cache_mode (PA, PA_BNSD, PA_NZ, PA_BLK_BNSD or PA_BLK_NZ) and is_output_kv=True its fourth output y_out is the normalised latent, [B, 1, S, kv_lora_rank], unquantised: read it there (the naive prefill's K/V up-projection does).",
                      "zh": "使用分页cache_mode（PA、PA_BNSD、PA_NZ、PA_BLK_BNSD或PA_BLK_NZ）并设is_output_kv=True时，第四个输出y_out即归一化后的潜在向量，形状[B, 1, S, kv_lora_rank]，未量化：从那里读取（naive prefill的K/V上投影即如此）。"},
                  "k_rot": {
                      "en": "with a paged cache_mode and is_output_kv=True its third output k_embed_out is the rotated rope key, [B, 1, S, 64], in the de-interleaved order of the cache: its reader must take that order, as the query's rope part does (query_rope_deinterleaved).",
                      "zh": "使用分页cache_mode并设is_output_kv=True时，第三个输出k_embed_out即旋转后的rope key，形状[B, 1, S, 64]，与缓存同为解交错顺序：读取方须按此顺序读取，与query的rope部分一致（query_rope_deinterleaved）。"}},
              "lookalikes": {"lookalike_half_mode_rope": {
                  "near_miss": "fixtures/kv_rmsnorm_rope_cache_nomatch_half_mode_rope.py",
                  "inputs": {"cos": {"shape": ["S", "R"], "dtype": "act", "init": "half_repeated"},
                             "sin": {"shape": ["S", "R"], "dtype": "act", "init": "half_repeated"}}}}},
    "near_misses": [
        {"file": "fixtures/kv_rmsnorm_rope_cache_nomatch_half_mode_rope.py",
         "reason": "the rope key is rotated in half mode (rotate_half without the pair reorder): the operator reorders the pairs first and would rotate it differently"},
    ],
    "doc_zh": """MLA的key路径（潜在向量RMSNorm、共享rope key的交错RoPE、两次缓存写入）替换为npu_kv_rmsnorm_rope_cache。

功能
    识别吸收式MLA在kv_a_proj_with_mqa之后的key路径：投影输出拆为压缩潜在向量（宽度
    kv_lora_rank）和所有头共享的一个rope key（宽度qk_rope_head_dim）；潜在向量做RMSNorm后写入
    潜在缓存，rope key用DeepSeek的交错（复数成对）RoPE旋转后写入rope key缓存，两者都写在
    start_pos .. start_pos + s位置。建议在未拆分的投影输出上改为一次
    torch_npu.npu_kv_rmsnorm_rope_cache(kv, gamma, cos, sin, index, k_cache, ckv_cache,
    cache_mode="Norm")。
原因
    该路径包含一次拆分、一次float32归一化、带多次视图的复数乘法以及两次跨步缓存拷贝，每一步都是
    一次内核启动并再次读写token。融合算子只读一次576维投影输出，并写入两个缓存。它是参考MLA链的
    prefill步骤（query用npu_interleave_rope，FIA带query_rope/key_rope）；decode用覆盖同一路径的
    npu_mla_prolog_v3。
示例
    kv, k_pe = torch.split(self.wkv_a(x), [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
    k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis)
    self.kv_cache[:bsz, start_pos:end_pos] = self.kv_norm(kv)
    self.pe_cache[:bsz, start_pos:end_pos] = k_pe.squeeze(2)
替代写法
    # 解交错顺序的cos/sin：cat((freqs.cos(), freqs.cos()), -1)，[B, 1, S, 64]
    index = torch.arange(start_pos, end_pos).expand(bsz, -1)
    torch_npu.npu_kv_rmsnorm_rope_cache(self.wkv_a(x).unsqueeze(1), self.kv_norm.weight, cos, sin, index,
                                        self.pe_cache.unsqueeze(1), self.kv_cache.unsqueeze(1),
                                        epsilon=self.kv_norm.eps, cache_mode="Norm")
修复安全性
    需要前置改造。算子在旋转前先对rope key解交错（先偶数通道后奇数通道），因此rope key缓存中保存
    的是该顺序的旋转结果，而不是模型的成对顺序：数值检查在同样重排后比较。只有query的rope部分也
    同样旋转（npu_interleave_rope，同一cos/sin）时得分才不变，这会改动query路径，因此是手工步骤；
    读取rope key缓存的其他代码也须按此顺序读取。潜在部分固定为512，rope部分固定为64，类型为
    bfloat16或float16，Norm模式下缓存长度不小于序列长度；检查项按配置评估。以half模式（不做成对
    重排）旋转的rope key是另一种旋转，不匹配。
参考
    catalog/mla/npu_kv_rmsnorm_rope_cache.toml；reference_chains.md
    （module-attention-mla-absorb，prefill）；pitfalls.md 4.2。
""",
}


def search(kv, gamma, freqs_cis, kv_cache, pe_cache, start_pos, eps):
    b, s, _ = kv.shape
    latent, k_pe = torch.split(kv, [kv_cache.shape[-1], pe_cache.shape[-1]], dim=-1)
    k_pe = k_pe.unsqueeze(2)
    pairs = torch.view_as_complex(k_pe.float().view(*k_pe.shape[:-1], -1, 2))
    table = freqs_cis.view(1, pairs.size(1), 1, pairs.size(-1))
    k_rot = torch.view_as_real(pairs * table).flatten(3).to(kv.dtype)
    x = latent.float()
    normed = (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * gamma).type_as(latent)
    kv_cache[:b, start_pos:start_pos + s] = normed
    pe_cache[:b, start_pos:start_pos + s] = k_rot.squeeze(2)
    return kv_cache, pe_cache


def search_f_rms_norm(kv, gamma, freqs_cis, kv_cache, pe_cache, start_pos, eps):
    b, s, _ = kv.shape
    latent, k_pe = torch.split(kv, [kv_cache.shape[-1], pe_cache.shape[-1]], dim=-1)
    k_pe = k_pe.unsqueeze(2)
    pairs = torch.view_as_complex(k_pe.float().view(*k_pe.shape[:-1], -1, 2))
    table = freqs_cis.view(1, pairs.size(1), 1, pairs.size(-1))
    k_rot = torch.view_as_real(pairs * table).flatten(3).to(kv.dtype)
    normed = F.rms_norm(latent, (latent.shape[-1],), gamma, eps)
    kv_cache[:b, start_pos:start_pos + s] = normed
    pe_cache[:b, start_pos:start_pos + s] = k_rot.squeeze(2)
    return kv_cache, pe_cache


def lookalike_half_mode_rope(kv, gamma, freqs_cis, kv_cache, pe_cache, start_pos, eps, cos=None, sin=None):
    # the rope key rotated with rotate_half on its own lanes: no pair reorder
    b, s, _ = kv.shape
    latent, k_pe = torch.split(kv, [kv_cache.shape[-1], pe_cache.shape[-1]], dim=-1)
    half = k_pe.shape[-1] // 2
    turned = torch.cat((-k_pe[..., half:], k_pe[..., :half]), dim=-1)
    k_rot = k_pe * cos + turned * sin
    x = latent.float()
    normed = (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * gamma).type_as(latent)
    kv_cache[:b, start_pos:start_pos + s] = normed
    pe_cache[:b, start_pos:start_pos + s] = k_rot
    return kv_cache, pe_cache


def replace(kv, gamma, freqs_cis, kv_cache, pe_cache, start_pos, eps):
    b, s, _ = kv.shape
    cos = torch.cat((freqs_cis.real, freqs_cis.real), dim=-1).to(kv.dtype)[None, None].expand(b, 1, s, -1)
    sin = torch.cat((freqs_cis.imag, freqs_cis.imag), dim=-1).to(kv.dtype)[None, None].expand(b, 1, s, -1)
    index = torch.arange(start_pos, start_pos + s, device=kv.device).expand(b, s)
    torch_npu.npu_kv_rmsnorm_rope_cache(kv.unsqueeze(1), gamma, cos, sin, index, pe_cache.unsqueeze(1),
                                        kv_cache.unsqueeze(1), epsilon=eps, cache_mode="Norm")
    return kv_cache, pe_cache


def naive_pair_order_tables(kv, gamma, freqs_cis, kv_cache, pe_cache, start_pos, eps):
    # cos/sin repeated element-wise (the table npu_rotary_mul's interleave mode takes): the
    # operator rotates the de-interleaved key, so each lane meets another lane's angle.
    b, s, _ = kv.shape
    cos = freqs_cis.real.repeat_interleave(2, dim=-1).to(kv.dtype)[None, None].expand(b, 1, s, -1)
    sin = freqs_cis.imag.repeat_interleave(2, dim=-1).to(kv.dtype)[None, None].expand(b, 1, s, -1)
    index = torch.arange(start_pos, start_pos + s, device=kv.device).expand(b, s)
    torch_npu.npu_kv_rmsnorm_rope_cache(kv.unsqueeze(1), gamma, cos, sin, index, pe_cache.unsqueeze(1),
                                        kv_cache.unsqueeze(1), epsilon=eps, cache_mode="Norm")
    return kv_cache, pe_cache
