"""MLA pre-processing: npu_kv_rmsnorm_rope_cache(_v2) and npu_mla_prolog(_v2/_v3).

RoPE here is the MLA form: the 64-wide rope input is de-interleaved (even elements
first, then odd ones) and rotated in half mode, exactly like npu_interleave_rope,
so prefill (interleave_rope + kv_rmsnorm_rope_cache) and decode (mla_prolog) fill
the caches with the same numbers.

Caches: "Norm"/"BSND"/"TND" are dense per-request caches; "PA", "PA_BNSD",
"PA_BSND" are paged [block_num, block_size, Nkv, D] caches addressed by flat slot
ids; "PA_NZ" is accepted either in that logical 4-D form (npu_format_cast is an
identity on CPU) or in its physical 5-D NZ form [block_num, D/c, block_size, Nkv, c].
Negative slot ids are skipped (padding tokens).
"""
import torch

from ._common import deinterleave, f32, is_power_of_two, require, rms_norm_f32, rotate_half, unsupported

_PROLOG_HE = (1024, 2048, 3072, 4096, 5120, 6144, 7168, 7680, 8192)


def _mla_rope(x, cos, sin):
    q = deinterleave(x)
    return q * cos + rotate_half(q) * sin


def _write_paged(op, cache, rows, slots):
    """rows (T, Nkv, D) into a paged cache at flat slot ids."""
    if cache.dim() == 5:  # physical NZ: [block_num, D/c, block_size, Nkv, c]
        block_size = cache.shape[2]
        for t, slot in enumerate(slots):
            if slot < 0:
                continue
            blk, off = divmod(slot, block_size)
            require(blk < cache.shape[0], op, f"slot {slot} is outside the cache")
            row = rows[t].to(cache.dtype)  # (Nkv, D)
            cache[blk, :, off] = row.reshape(row.shape[0], cache.shape[1], cache.shape[4]) \
                .permute(1, 0, 2)
        return
    require(cache.dim() == 4, op, "paged caches must be [block_num, block_size, Nkv, D]")
    block_size = cache.shape[1]
    for t, slot in enumerate(slots):
        if slot < 0:
            continue
        blk, off = divmod(slot, block_size)
        require(blk < cache.shape[0], op, f"slot {slot} is outside the cache")
        cache[blk, off] = rows[t].to(cache.dtype).reshape(cache.shape[2:])


def _kv_rmsnorm_rope(op, kv, gamma, cos, sin, index, k_cache, ckv_cache, scales, epsilon,
                     cache_mode, is_output_kv):
    require(kv.dim() == 4 and kv.shape[1] == 1 and kv.shape[-1] == 576, op,
            f"kv must be [B, 1, S, 576] (512 RMSNorm + 64 RoPE), got {tuple(kv.shape)}")
    require(tuple(gamma.shape) == (512,), op, "gamma must be [512]")
    want = (kv.shape[0], 1, kv.shape[2], 64)
    require(tuple(cos.shape) == want and tuple(sin.shape) == want, op,
            f"cos/sin must be [B, 1, S, 64] = {want}")
    if any(s is not None for s in scales):
        raise unsupported(op, "int8 cache quantisation (k_rope_scale/c_kv_scale/offsets)")
    if cache_mode in ("PA_BLK_BNSD", "PA_BLK_NZ"):
        raise unsupported(op, f"cache_mode {cache_mode!r} (block-start indices)")
    require(cache_mode in ("Norm", "PA", "PA_BNSD", "PA_NZ"), op,
            "cache_mode must be Norm, PA, PA_BNSD, PA_NZ, PA_BLK_BNSD or PA_BLK_NZ")
    require(not (is_output_kv and cache_mode == "Norm"), op,
            "is_output_kv is only supported in the PA cache modes")
    x = f32(kv)
    y, _ = rms_norm_f32(x[..., :512], gamma, epsilon)
    k_embed = _mla_rope(x[..., 512:], f32(cos), f32(sin))
    batch, seq = kv.shape[0], kv.shape[2]
    if cache_mode == "Norm":
        require(tuple(index.shape) == (batch, seq), op, "Norm mode needs index [B, S]")
        for b in range(batch):
            for s in range(seq):
                pos = int(index[b, s])
                if pos < 0:
                    continue
                require(pos < k_cache.shape[2], op, f"index {pos} exceeds cache_length")
                k_cache[b, 0, pos] = k_embed[b, 0, s].to(k_cache.dtype)
                ckv_cache[b, 0, pos] = y[b, 0, s].to(ckv_cache.dtype)
    else:
        require(index.numel() == batch * seq, op, "PA modes need index [B * S] (one slot per token)")
        slots = [int(v) for v in index.reshape(-1).tolist()]
        _write_paged(op, k_cache, k_embed.reshape(batch * seq, 1, 64), slots)
        _write_paged(op, ckv_cache, y.reshape(batch * seq, 1, 512), slots)
    return k_embed.to(kv.dtype), y.to(kv.dtype)


def npu_kv_rmsnorm_rope_cache(kv, gamma, cos, sin, index, k_cache, ckv_cache, *,
                              k_rope_scale=None, c_kv_scale=None, k_rope_offset=None,
                              c_kv_offset=None, epsilon=1e-5, cache_mode='Norm',
                              is_output_kv=False):
    """Returns (k_cache, ckv_cache, k_embed_out, y_out); the caches are also updated in place."""
    k_embed, y = _kv_rmsnorm_rope(
        "npu_kv_rmsnorm_rope_cache", kv, gamma, cos, sin, index, k_cache, ckv_cache,
        (k_rope_scale, c_kv_scale, k_rope_offset, c_kv_offset), epsilon, cache_mode, is_output_kv)
    return k_cache, ckv_cache, k_embed, y


def npu_kv_rmsnorm_rope_cache_v2(kv, gamma, cos, sin, index, k_cache, ckv_cache, *,
                                 k_rope_scale=None, c_kv_scale=None, k_rope_offset=None,
                                 c_kv_offset=None, v=None, epsilon=1e-5, cache_mode='Norm',
                                 is_output_kv=False, k_cache_dtype=None, ckv_cache_dtype=None):
    """In-place cache update; returns (k_embed_out, y_out)."""
    op = "npu_kv_rmsnorm_rope_cache_v2"
    if v is not None:
        raise unsupported(op, "the v input")
    return _kv_rmsnorm_rope(op, kv, gamma, cos, sin, index, k_cache, ckv_cache,
                            (k_rope_scale, c_kv_scale, k_rope_offset, c_kv_offset), epsilon,
                            cache_mode, is_output_kv)


def _check_prolog_shapes(op, token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr, he_set,
                         hcq_set, d_set):
    he, hcq = weight_dq.shape
    n, d, hckv = weight_uk.shape
    dr = weight_dkv_kr.shape[1] - hckv
    require(token_x.shape[-1] == he, op, "token_x last axis must equal weight_dq rows (He)")
    require(he in he_set, op, f"He must be one of {he_set} (got {he})")
    require(hcq in hcq_set, op, f"Hcq must be one of {hcq_set} (got {hcq})")
    require(hckv == 512, op, f"Hckv must be 512 (got {hckv})")
    require(d in d_set, op, f"D must be one of {d_set} (got {d})")
    require(dr == 64, op, f"Dr must be 64 (got {dr})")
    require(is_power_of_two(n) and n <= 128, op, f"N must be in {{1, 2, 4, ..., 128}} (got {n})")
    require(tuple(weight_uq_qr.shape) == (hcq, n * (d + dr)), op,
            f"weight_uq_qr must be [Hcq, N * (D + Dr)] = {(hcq, n * (d + dr))}")
    require(weight_dkv_kr.shape[0] == he, op, "weight_dkv_kr must be [He, Hckv + Dr]")
    return n, d, hckv, dr


def _prolog_core(op, token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr, gamma_cq,
                 gamma_ckv, rope_sin, rope_cos, kv_cache, kr_cache, cache_index, eps_cq, eps_ckv,
                 cache_mode, he_set, hcq_set, d_set):
    n, d, hckv, dr = _check_prolog_shapes(op, token_x, weight_dq, weight_uq_qr, weight_uk,
                                          weight_dkv_kr, he_set, hcq_set, d_set)
    lead = tuple(token_x.shape[:-1])
    x = f32(token_x).reshape(-1, token_x.shape[-1])
    cos = f32(rope_cos).reshape(-1, dr)
    sin = f32(rope_sin).reshape(-1, dr)
    c_q, _ = rms_norm_f32(x @ f32(weight_dq), gamma_cq, eps_cq)
    qcqr = (c_q @ f32(weight_uq_qr)).reshape(-1, n, d + dr)
    q_nope = torch.einsum("tnd,ndh->tnh", qcqr[..., :d], f32(weight_uk))
    q_rope = _mla_rope(qcqr[..., d:], cos.unsqueeze(1), sin.unsqueeze(1))
    kvr = x @ f32(weight_dkv_kr)
    c_kv, _ = rms_norm_f32(kvr[:, :hckv], gamma_ckv, eps_ckv)
    k_rope = _mla_rope(kvr[:, hckv:], cos, sin)
    if cache_mode in ("PA_BSND", "PA_NZ"):
        require(cache_index is not None, op, f"cache_mode {cache_mode} needs cache_index")
        require(cache_index.numel() == x.shape[0], op, "cache_index needs one slot per token")
        for cache in (kv_cache, kr_cache):
            bs = cache.shape[2] if cache.dim() == 5 else cache.shape[1]
            require(bs % 16 == 0 and 16 <= bs <= 1024, op,
                    f"BlockSize must be a multiple of 16 in [16, 1024] (got {bs})")
        slots = [int(v) for v in cache_index.reshape(-1).tolist()]
        _write_paged(op, kv_cache, c_kv.unsqueeze(1), slots)
        _write_paged(op, kr_cache, k_rope.unsqueeze(1), slots)
    elif cache_mode in ("BSND", "TND"):
        kv_cache.copy_(c_kv.reshape(kv_cache.shape).to(kv_cache.dtype))
        kr_cache.copy_(k_rope.reshape(kr_cache.shape).to(kr_cache.dtype))
    else:
        raise unsupported(op, f"cache_mode {cache_mode!r}")
    query_out = q_nope.reshape(*lead, n, hckv).to(token_x.dtype)
    query_rope_out = q_rope.reshape(*lead, n, dr).to(token_x.dtype)
    return query_out, query_rope_out, c_q.reshape(*lead, -1).to(token_x.dtype)


def _reject_quant(op, **named):
    for name, value in named.items():
        if value is not None:
            raise unsupported(op, f"{name} (quantised MLA prolog)")


def _empty():
    return torch.empty(0, dtype=torch.float32)


def npu_mla_prolog_v3(token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr,
                      rmsnorm_gamma_cq, rmsnorm_gamma_ckv, rope_sin, rope_cos, kv_cache, kr_cache,
                      cache_index=None, dequant_scale_x=None, dequant_scale_w_dq=None,
                      dequant_scale_w_uq_qr=None, dequant_scale_w_dkv_kr=None,
                      quant_scale_ckv=None, quant_scale_ckr=None, smooth_scales_cq=None,
                      actual_seq_len=None, k_nope_clip_alpha=None, rmsnorm_epsilon_cq=1e-05,
                      rmsnorm_epsilon_ckv=1e-05, cache_mode='PA_BSND', query_norm_flag=False,
                      weight_quant_mode=0, kv_cache_quant_mode=0, query_quant_mode=0,
                      ckvkr_repo_mode=0, quant_scale_repo_mode=0, tile_size=128, qc_qr_scale=1.0,
                      kc_scale=1.0, token_x_dtype=None, weight_dq_dtype=None,
                      weight_uq_qr_dtype=None, weight_dkv_kr_dtype=None, kv_cache_dtype=None):
    """Returns (query_out, query_rope_out, dequant_scale_q_nope, query_norm, dequant_scale_q_norm).

    Unquantised outputs that the device leaves empty are returned as empty float32 tensors.
    """
    op = "npu_mla_prolog_v3"
    _reject_quant(op, dequant_scale_x=dequant_scale_x, dequant_scale_w_dq=dequant_scale_w_dq,
                  dequant_scale_w_uq_qr=dequant_scale_w_uq_qr,
                  dequant_scale_w_dkv_kr=dequant_scale_w_dkv_kr, quant_scale_ckv=quant_scale_ckv,
                  quant_scale_ckr=quant_scale_ckr, smooth_scales_cq=smooth_scales_cq,
                  k_nope_clip_alpha=k_nope_clip_alpha)
    if weight_quant_mode or kv_cache_quant_mode or query_quant_mode or ckvkr_repo_mode \
            or quant_scale_repo_mode:
        raise unsupported(op, "weight/kv-cache/query quantisation and combined cache storage")
    if qc_qr_scale != 1.0 or kc_scale != 1.0:
        raise unsupported(op, "qc_qr_scale/kc_scale other than 1.0")
    if cache_mode in ("PA_BLK_BSND", "PA_BLK_NZ"):
        raise unsupported(op, f"cache_mode {cache_mode!r} (block-start indices)")
    q, qr, qnorm = _prolog_core(op, token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr,
                                rmsnorm_gamma_cq, rmsnorm_gamma_ckv, rope_sin, rope_cos, kv_cache,
                                kr_cache, cache_index, rmsnorm_epsilon_cq, rmsnorm_epsilon_ckv,
                                cache_mode, _PROLOG_HE, (1536, 2048), (128, 192))
    return q, qr, _empty(), (qnorm if query_norm_flag else _empty()), _empty()


def npu_mla_prolog_v2(token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr,
                      rmsnorm_gamma_cq, rmsnorm_gamma_ckv, rope_sin, rope_cos, cache_index,
                      kv_cache, kr_cache, *, dequant_scale_x=None, dequant_scale_w_dq=None,
                      dequant_scale_w_uq_qr=None, dequant_scale_w_dkv_kr=None,
                      quant_scale_ckv=None, quant_scale_ckr=None, smooth_scales_cq=None,
                      rmsnorm_epsilon_cq=1e-05, rmsnorm_epsilon_ckv=1e-05, cache_mode="PA_BSND"):
    """Returns (query, query_rope, kv_cache, kr_cache, dequant_scale_q_nope); He 7168, Hcq 1536, D 128."""
    op = "npu_mla_prolog_v2"
    _reject_quant(op, dequant_scale_x=dequant_scale_x, dequant_scale_w_dq=dequant_scale_w_dq,
                  dequant_scale_w_uq_qr=dequant_scale_w_uq_qr,
                  dequant_scale_w_dkv_kr=dequant_scale_w_dkv_kr, quant_scale_ckv=quant_scale_ckv,
                  quant_scale_ckr=quant_scale_ckr, smooth_scales_cq=smooth_scales_cq)
    require(cache_mode in ("PA_BSND", "PA_NZ"), op, "cache_mode must be PA_BSND or PA_NZ")
    block_size = kv_cache.shape[2] if kv_cache.dim() == 5 else kv_cache.shape[1]
    require(block_size in (16, 128), op, f"BlockSize must be 16 or 128 (got {block_size})")
    q, qr, _ = _prolog_core(op, token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr,
                            rmsnorm_gamma_cq, rmsnorm_gamma_ckv, rope_sin, rope_cos, kv_cache,
                            kr_cache, cache_index, rmsnorm_epsilon_cq, rmsnorm_epsilon_ckv,
                            cache_mode, (7168,), (1536,), (128,))
    # Without KV quantisation the device returns a one-element scale.
    return q, qr, kv_cache, kr_cache, torch.zeros(1, dtype=torch.float32)


def npu_mla_prolog(token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr, rmsnorm_gamma_cq,
                   rmsnorm_gamma_ckv, rope_sin, rope_cos, cache_index, kv_cache, kr_cache, *,
                   dequant_scale_x=None, dequant_scale_w_dq=None, dequant_scale_w_uq_qr=None,
                   dequant_scale_w_dkv_kr=None, quant_scale_ckv=None, quant_scale_ckr=None,
                   smooth_scales_cq=None, rmsnorm_epsilon_cq=1e-05, rmsnorm_epsilon_ckv=1e-05,
                   cache_mode="PA_BSND"):
    """First version (no longer maintained on the device): returns (query, query_rope,
    kv_cache, kr_cache) with the v2 maths."""
    out = npu_mla_prolog_v2(
        token_x, weight_dq, weight_uq_qr, weight_uk, weight_dkv_kr, rmsnorm_gamma_cq,
        rmsnorm_gamma_ckv, rope_sin, rope_cos, cache_index, kv_cache, kr_cache,
        dequant_scale_x=dequant_scale_x, dequant_scale_w_dq=dequant_scale_w_dq,
        dequant_scale_w_uq_qr=dequant_scale_w_uq_qr, dequant_scale_w_dkv_kr=dequant_scale_w_dkv_kr,
        quant_scale_ckv=quant_scale_ckv, quant_scale_ckr=quant_scale_ckr,
        smooth_scales_cq=smooth_scales_cq, rmsnorm_epsilon_cq=rmsnorm_epsilon_cq,
        rmsnorm_epsilon_ckv=rmsnorm_epsilon_ckv, cache_mode=cache_mode)
    return out[:4]
