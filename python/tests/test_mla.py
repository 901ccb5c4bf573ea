"""MLA cache writes and prologs against direct formulations."""
import unittest

import torch

from npufuse_ref import mla
from tests import direct


def mla_rope_direct(x, cos, sin):
    """De-interleave (even then odd), then rotate-half RoPE, in float64."""
    x = x.double()
    q = torch.cat([x[..., 0::2], x[..., 1::2]], -1)
    return q * cos.double() + direct.rotate_half(q) * sin.double()


class KvRmsNormRopeCache(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.b, self.s = 2, 3
        self.kv = torch.randn(self.b, 1, self.s, 576)
        self.gamma = torch.randn(512)
        self.cos = torch.randn(self.b, 1, self.s, 64)
        self.sin = torch.randn(self.b, 1, self.s, 64)
        self.y = direct.rms_norm(self.kv[..., :512], self.gamma, 1e-5).float()
        self.k = mla_rope_direct(self.kv[..., 512:], self.cos, self.sin).float()

    def test_norm_mode_writes_per_batch_offsets(self):
        kc, cc = torch.zeros(self.b, 1, 8, 64), torch.zeros(self.b, 1, 8, 512)
        index = torch.tensor([[0, 1, 2], [5, 6, 7]])
        out = mla.npu_kv_rmsnorm_rope_cache(self.kv, self.gamma, self.cos, self.sin, index, kc, cc)
        self.assertIs(out[0], kc)
        for b in range(self.b):
            for s in range(self.s):
                torch.testing.assert_close(kc[b, 0, index[b, s]], self.k[b, 0, s], atol=1e-5, rtol=1e-5)
                torch.testing.assert_close(cc[b, 0, index[b, s]], self.y[b, 0, s], atol=1e-5, rtol=1e-5)

    def test_pa_modes_write_flat_slots_and_v2_returns_two(self):
        slots = torch.tensor([3, 17, 4, 30, 31, 0])
        for mode in ("PA", "PA_BNSD", "PA_NZ"):
            kc, cc = torch.zeros(2, 16, 1, 64), torch.zeros(2, 16, 1, 512)
            k_embed, y = mla.npu_kv_rmsnorm_rope_cache_v2(
                self.kv, self.gamma, self.cos, self.sin, slots, kc, cc, cache_mode=mode,
                is_output_kv=True)
            torch.testing.assert_close(k_embed, self.k, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(y, self.y, atol=1e-5, rtol=1e-5)
            flat_k, flat_c = kc.reshape(32, 64), cc.reshape(32, 512)
            torch.testing.assert_close(flat_k[slots], self.k.reshape(-1, 64), atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(flat_c[slots], self.y.reshape(-1, 512), atol=1e-5, rtol=1e-5)

    def test_pa_nz_physical_layout(self):
        slots = torch.tensor([3, 17, 4, 30, 31, 0])
        kc, cc = torch.zeros(2, 4, 16, 1, 16), torch.zeros(2, 32, 16, 1, 16)
        mla.npu_kv_rmsnorm_rope_cache_v2(self.kv, self.gamma, self.cos, self.sin, slots, kc, cc,
                                         cache_mode="PA_NZ")
        logical = kc.permute(0, 2, 3, 1, 4).reshape(32, 64)
        torch.testing.assert_close(logical[slots], self.k.reshape(-1, 64), atol=1e-5, rtol=1e-5)

    def test_constraints(self):
        with self.assertRaisesRegex(ValueError, "576"):
            mla.npu_kv_rmsnorm_rope_cache(torch.randn(1, 1, 2, 320), self.gamma, self.cos[:1, :, :2],
                                          self.sin[:1, :, :2], torch.zeros(1, 2, dtype=torch.long),
                                          torch.zeros(1, 1, 4, 64), torch.zeros(1, 1, 4, 512))
        with self.assertRaisesRegex(ValueError, "is_output_kv"):
            mla.npu_kv_rmsnorm_rope_cache(self.kv, self.gamma, self.cos, self.sin,
                                          torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 1, 4, 64),
                                          torch.zeros(2, 1, 4, 512), is_output_kv=True)
        with self.assertRaises(NotImplementedError):
            mla.npu_kv_rmsnorm_rope_cache(self.kv, self.gamma, self.cos, self.sin,
                                          torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 1, 4, 64),
                                          torch.zeros(2, 1, 4, 512), k_rope_scale=torch.ones(64),
                                          c_kv_scale=torch.ones(512))


def prolog_direct(x, w_dq, w_uq_qr, w_uk, w_dkv_kr, g_cq, g_ckv, cos, sin, n, d):
    x = x.double()
    c_q = direct.rms_norm(x @ w_dq.double(), g_cq, 1e-5)
    heads = (c_q @ w_uq_qr.double()).reshape(x.shape[0], n, d + 64)
    q_nope = torch.stack([heads[:, h, :d] @ w_uk[h].double() for h in range(n)], 1)
    q_rope = mla_rope_direct(heads[:, :, d:], cos.unsqueeze(1), sin.unsqueeze(1))
    kv = x @ w_dkv_kr.double()
    c_kv = direct.rms_norm(kv[:, :512], g_ckv, 1e-5)
    k_rope = mla_rope_direct(kv[:, 512:], cos, sin)
    return q_nope, q_rope, c_kv, k_rope, c_q


class MlaProlog(unittest.TestCase):
    def make(self, he, hcq, n, d, tokens=3):
        torch.manual_seed(1)
        w = dict(
            weight_dq=torch.randn(he, hcq) / he ** 0.5,
            weight_uq_qr=torch.randn(hcq, n * (d + 64)) / hcq ** 0.5,
            weight_uk=torch.randn(n, d, 512) / d ** 0.5,
            weight_dkv_kr=torch.randn(he, 576) / he ** 0.5,
            rmsnorm_gamma_cq=torch.rand(hcq) + 0.5,
            rmsnorm_gamma_ckv=torch.rand(512) + 0.5,
        )
        x = torch.randn(tokens, he)
        a = torch.rand(tokens, 32) * 3
        cos, sin = torch.cat([a.cos(), a.cos()], -1), torch.cat([a.sin(), a.sin()], -1)
        return x, w, cos, sin

    def test_v3_paged_matches_direct(self):
        n, d = 2, 128
        x, w, cos, sin = self.make(1024, 1536, n, d)
        kv_cache, kr_cache = torch.zeros(2, 16, 1, 512), torch.zeros(2, 16, 1, 64)
        slots = torch.tensor([0, 17, 5])
        q, qr, dq, qn, dqn = mla.npu_mla_prolog_v3(
            x, w["weight_dq"], w["weight_uq_qr"], w["weight_uk"], w["weight_dkv_kr"],
            w["rmsnorm_gamma_cq"], w["rmsnorm_gamma_ckv"], sin, cos, kv_cache, kr_cache,
            cache_index=slots, query_norm_flag=True)
        ref = prolog_direct(x, w["weight_dq"], w["weight_uq_qr"], w["weight_uk"], w["weight_dkv_kr"],
                            w["rmsnorm_gamma_cq"], w["rmsnorm_gamma_ckv"], cos, sin, n, d)
        tol = dict(atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(q, ref[0].float(), **tol)
        torch.testing.assert_close(qr, ref[1].float(), **tol)
        torch.testing.assert_close(kv_cache.reshape(32, 512)[slots], ref[2].float(), **tol)
        torch.testing.assert_close(kr_cache.reshape(32, 64)[slots], ref[3].float(), **tol)
        torch.testing.assert_close(qn, ref[4].float(), **tol)
        self.assertEqual(dq.numel(), 0)

    def test_v3_cache_agrees_with_kv_rmsnorm_rope_cache(self):
        n, d = 1, 128
        x, w, cos, sin = self.make(1024, 1536, n, d, tokens=2)
        kv_cache, kr_cache = torch.zeros(1, 16, 1, 512), torch.zeros(1, 16, 1, 64)
        mla.npu_mla_prolog_v3(x, w["weight_dq"], w["weight_uq_qr"], w["weight_uk"],
                              w["weight_dkv_kr"], w["rmsnorm_gamma_cq"], w["rmsnorm_gamma_ckv"],
                              sin, cos, kv_cache, kr_cache, cache_index=torch.tensor([0, 1]))
        latent = (x @ w["weight_dkv_kr"]).reshape(1, 1, 2, 576)
        kc, cc = torch.zeros(1, 16, 1, 64), torch.zeros(1, 16, 1, 512)
        mla.npu_kv_rmsnorm_rope_cache_v2(latent, w["rmsnorm_gamma_ckv"], cos.reshape(1, 1, 2, 64),
                                         sin.reshape(1, 1, 2, 64), torch.tensor([0, 1]), kc, cc,
                                         cache_mode="PA_BNSD")
        torch.testing.assert_close(kc, kr_cache, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(cc, kv_cache, atol=1e-5, rtol=1e-5)

    def test_v2_shape_set(self):
        x, w, cos, sin = self.make(7168, 1536, 1, 128, tokens=1)
        kv_cache, kr_cache = torch.zeros(1, 16, 1, 512), torch.zeros(1, 16, 1, 64)
        out = mla.npu_mla_prolog_v2(x, w["weight_dq"], w["weight_uq_qr"], w["weight_uk"],
                                    w["weight_dkv_kr"], w["rmsnorm_gamma_cq"],
                                    w["rmsnorm_gamma_ckv"], sin, cos, torch.tensor([3]), kv_cache,
                                    kr_cache)
        self.assertEqual(tuple(out[0].shape), (1, 1, 512))
        self.assertIs(out[2], kv_cache)
        x, w, cos, sin = self.make(1024, 1536, 1, 128, tokens=1)
        with self.assertRaisesRegex(ValueError, "He"):
            mla.npu_mla_prolog_v2(x, w["weight_dq"], w["weight_uq_qr"], w["weight_uk"],
                                  w["weight_dkv_kr"], w["rmsnorm_gamma_cq"], w["rmsnorm_gamma_ckv"],
                                  sin, cos, torch.tensor([3]), kv_cache, kr_cache)

    def test_first_version_returns_four_outputs_like_v2(self):
        x, w, cos, sin = self.make(7168, 1536, 2, 128, tokens=2)
        args = (x, w["weight_dq"], w["weight_uq_qr"], w["weight_uk"], w["weight_dkv_kr"],
                w["rmsnorm_gamma_cq"], w["rmsnorm_gamma_ckv"], sin, cos, torch.tensor([1, 5]))
        v1 = mla.npu_mla_prolog(*args, torch.zeros(1, 16, 1, 512), torch.zeros(1, 16, 1, 64))
        v2 = mla.npu_mla_prolog_v2(*args, torch.zeros(1, 16, 1, 512), torch.zeros(1, 16, 1, 64))
        self.assertEqual(len(v1), 4)
        for a, b in zip(v1, v2[:4]):
            torch.testing.assert_close(a, b)

    def test_v3_rejects_odd_head_count(self):
        x, w, cos, sin = self.make(1024, 1536, 3, 128, tokens=1)
        with self.assertRaisesRegex(ValueError, "N must be"):
            mla.npu_mla_prolog_v3(x, w["weight_dq"], w["weight_uq_qr"], w["weight_uk"],
                                  w["weight_dkv_kr"], w["rmsnorm_gamma_cq"], w["rmsnorm_gamma_ckv"],
                                  sin, cos, torch.zeros(1, 16, 1, 512), torch.zeros(1, 16, 1, 64),
                                  cache_index=torch.tensor([0]))


if __name__ == "__main__":
    unittest.main()
