"""FIA v1/v2, PFA and IFA against an explicit softmax(Q K^T * scale + mask) V."""
import unittest

import torch

from npufuse_ref import ConstraintError
from npufuse_ref.attention import (npu_fused_infer_attention_score as fia,
                                   npu_fused_infer_attention_score_v2 as fia_v2,
                                   npu_incre_flash_attention, npu_prompt_flash_attention)
from tests import direct

TOL = dict(atol=1e-5, rtol=1e-5)


def bnsd_reference(q, k, v, scale, allowed_fn=None):
    """Per-batch direct attention on BNSD tensors."""
    outs, lses = [], []
    for b in range(q.shape[0]):
        allowed = allowed_fn(q.shape[2], k.shape[2]) if allowed_fn else None
        o, l = direct.attention(q[b], k[b], v[b], scale, allowed)
        outs.append(o)
        lses.append(l)
    return torch.stack(outs).float(), torch.stack(lses).float()


class DenseLayouts(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.q = torch.randn(2, 8, 6, 16)
        self.k = torch.randn(2, 2, 9, 16)
        self.v = torch.randn(2, 2, 9, 16)
        self.scale = 16 ** -0.5

    def test_bnsd_gqa_matches_direct(self):
        out, lse = fia(self.q, self.k, self.v, num_heads=8, num_key_value_heads=2,
                       input_layout="BNSD", scale=self.scale, softmax_lse_flag=True)
        ref, ref_lse = bnsd_reference(self.q, self.k, self.v, self.scale)
        torch.testing.assert_close(out, ref, **TOL)
        torch.testing.assert_close(lse, ref_lse, **TOL)

    def test_lse_is_placeholder_without_flag(self):
        _, lse = fia(self.q, self.k, self.v, num_heads=8, num_key_value_heads=2,
                     input_layout="BNSD")
        self.assertEqual(tuple(lse.shape), (1,))

    def test_bsh_and_bsnd_agree_with_bnsd(self):
        ref, _ = bnsd_reference(self.q, self.k, self.v, self.scale)
        q_bsnd, k_bsnd, v_bsnd = (t.transpose(1, 2).contiguous() for t in (self.q, self.k, self.v))
        out = fia(q_bsnd, k_bsnd, v_bsnd, num_heads=8, num_key_value_heads=2,
                  input_layout="BSND", scale=self.scale)[0]
        torch.testing.assert_close(out, ref.transpose(1, 2), **TOL)
        out = fia(q_bsnd.flatten(2), k_bsnd.flatten(2), v_bsnd.flatten(2), num_heads=8,
                  num_key_value_heads=2, input_layout="BSH", scale=self.scale)[0]
        torch.testing.assert_close(out, ref.transpose(1, 2).flatten(2), **TOL)

    def test_output_layout_suffixes(self):
        ref, _ = bnsd_reference(self.q, self.k, self.v, self.scale)
        out = fia(self.q, self.k, self.v, num_heads=8, num_key_value_heads=2,
                  input_layout="BNSD_BSND", scale=self.scale)[0]
        torch.testing.assert_close(out, ref.transpose(1, 2), **TOL)
        out = fia(self.q, self.k, self.v, num_heads=8, num_key_value_heads=2,
                  input_layout="BNSD_NBSD", scale=self.scale)[0]
        torch.testing.assert_close(out, ref.permute(1, 0, 2, 3), **TOL)

    def test_bf16_in_bf16_out(self):
        out = fia(self.q.bfloat16(), self.k.bfloat16(), self.v.bfloat16(), num_heads=8,
                  num_key_value_heads=2, input_layout="BNSD", scale=self.scale)[0]
        self.assertEqual(out.dtype, torch.bfloat16)
        ref, _ = bnsd_reference(self.q.bfloat16().float(), self.k.bfloat16().float(),
                                self.v.bfloat16().float(), self.scale)
        torch.testing.assert_close(out.float(), ref, atol=2e-2, rtol=2e-2)


class SparseModes(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(1)
        self.q = torch.randn(1, 4, 5, 16)
        self.k = torch.randn(1, 4, 9, 16)
        self.v = torch.randn(1, 4, 9, 16)
        self.mask = direct.optimized_mask()

    def run_mode(self, mode, **kw):
        return fia(self.q, self.k, self.v, num_heads=4, input_layout="BNSD", scale=0.25,
                   sparse_mode=mode, atten_mask=kw.pop("atten_mask", self.mask), **kw)[0]

    def test_mode3_right_down_causal(self):
        ref, _ = bnsd_reference(self.q, self.k, self.v, 0.25, direct.causal_right_down)
        torch.testing.assert_close(self.run_mode(3), ref, **TOL)

    def test_mode2_left_up_causal(self):
        ref, _ = bnsd_reference(self.q, self.k, self.v, 0.25, direct.causal_left_up)
        torch.testing.assert_close(self.run_mode(2), ref, **TOL)

    def test_mode4_band(self):
        ref, _ = bnsd_reference(self.q, self.k, self.v, 0.25,
                                lambda sq, skv: direct.band_right_down(sq, skv, 3, 0))
        torch.testing.assert_close(self.run_mode(4, pre_tokens=3, next_tokens=0), ref, **TOL)

    def test_mode0_full_mask_true_means_masked(self):
        user = torch.rand(1, 1, 5, 9) > 0.6
        user[..., 0] = False
        ref, _ = bnsd_reference(self.q, self.k, self.v, 0.25, lambda sq, skv: ~user[0, 0])
        torch.testing.assert_close(self.run_mode(0, atten_mask=user), ref, **TOL)

    def test_mode0_without_mask_is_full_attention(self):
        ref, _ = bnsd_reference(self.q, self.k, self.v, 0.25)
        torch.testing.assert_close(self.run_mode(0, atten_mask=None, next_tokens=0), ref, **TOL)

    def test_modes_2_3_4_need_the_2048_mask(self):
        for mode in (2, 3, 4):
            with self.assertRaisesRegex(ValueError, "2048"):
                self.run_mode(mode, atten_mask=None)
            with self.assertRaisesRegex(ValueError, "2048"):
                self.run_mode(mode, atten_mask=torch.ones(9, 9, dtype=torch.bool).triu(1))

    def test_inverted_optimized_mask_is_rejected(self):
        with self.assertRaisesRegex(ValueError, "triu"):
            self.run_mode(3, atten_mask=~direct.optimized_mask())

    def test_under_ranked_mask_is_rejected(self):
        with self.assertRaisesRegex(ValueError, "atten_mask shape"):
            self.run_mode(0, atten_mask=torch.zeros(1, 1, 1, 9, dtype=torch.bool))

    def test_mask_dtype_must_be_bool_or_int8(self):
        with self.assertRaisesRegex(ValueError, "dtype"):
            self.run_mode(0, atten_mask=torch.zeros(1, 1, 5, 9))


class TokenLayouts(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(2)
        self.q_lens, self.kv_lens = [3, 1, 4], [5, 2, 6]
        self.q = torch.randn(sum(self.q_lens), 4, 128)
        self.k = torch.randn(sum(self.kv_lens), 2, 128)
        self.v = torch.randn(sum(self.kv_lens), 2, 128)

    def cum(self, lens):
        return torch.cumsum(torch.tensor(lens), 0).tolist()

    def reference(self, causal):
        outs, qa, ka = [], 0, 0
        for sq, skv in zip(self.q_lens, self.kv_lens):
            allowed = direct.causal_right_down(sq, skv) if causal else None
            o, _ = direct.attention(self.q[qa:qa + sq].transpose(0, 1),
                                    self.k[ka:ka + skv].transpose(0, 1),
                                    self.v[ka:ka + skv].transpose(0, 1), 0.1, allowed)
            outs.append(o.transpose(0, 1))
            qa, ka = qa + sq, ka + skv
        return torch.cat(outs).float()

    def run_tnd(self, layout="TND", **kw):
        return fia(self.q, self.k, self.v, num_heads=4, num_key_value_heads=2, scale=0.1,
                   input_layout=layout, actual_seq_lengths=self.cum(self.q_lens),
                   actual_seq_lengths_kv=self.cum(self.kv_lens), **kw)[0]

    def test_tnd_cumulative_lengths_causal(self):
        out = self.run_tnd(sparse_mode=3, atten_mask=direct.optimized_mask())
        torch.testing.assert_close(out, self.reference(True), **TOL)

    def test_tnd_ntd_output(self):
        out = self.run_tnd(layout="TND_NTD")
        torch.testing.assert_close(out, self.reference(False).transpose(0, 1), **TOL)

    def test_tnd_lengths_must_be_cumulative_and_end_at_t(self):
        with self.assertRaisesRegex(ValueError, "must equal T"):
            fia(self.q, self.k, self.v, num_heads=4, num_key_value_heads=2, input_layout="TND",
                actual_seq_lengths=[3, 4, 7], actual_seq_lengths_kv=self.cum(self.kv_lens))
        with self.assertRaisesRegex(ValueError, "cumulative"):
            fia(self.q, self.k, self.v, num_heads=4, num_key_value_heads=2, input_layout="TND",
                actual_seq_lengths=[3, 1, 8], actual_seq_lengths_kv=self.cum(self.kv_lens))

    def test_tnd_head_dim_limits(self):
        q = torch.randn(4, 2, 256)
        kv = torch.randn(4, 2, 256)
        with self.assertRaisesRegex(ValueError, "128"):
            fia(q, kv, kv, num_heads=2, input_layout="TND", actual_seq_lengths=[4],
                actual_seq_lengths_kv=[4])

    def test_v2_learnable_sink(self):
        sink = torch.randn(4)
        out = fia_v2(self.q, self.k, self.v, num_query_heads=4, num_key_value_heads=2,
                     softmax_scale=0.1, input_layout="TND", actual_seq_qlen=self.cum(self.q_lens),
                     actual_seq_kvlen=self.cum(self.kv_lens), learnable_sink=sink)[0]
        outs, qa, ka = [], 0, 0
        for sq, skv in zip(self.q_lens, self.kv_lens):
            o, _ = direct.attention(self.q[qa:qa + sq].transpose(0, 1),
                                    self.k[ka:ka + skv].transpose(0, 1),
                                    self.v[ka:ka + skv].transpose(0, 1), 0.1, sink=sink)
            outs.append(o.transpose(0, 1))
            qa, ka = qa + sq, ka + skv
        torch.testing.assert_close(out, torch.cat(outs).float(), **TOL)


class PagedAndActualLengths(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(3)
        self.block = 128
        self.kv_lens = [130, 40]
        self.k = torch.randn(2, 2, 256, 16)  # BNSD, contiguous truth
        self.v = torch.randn(2, 2, 256, 16)
        # scatter the two sequences into shuffled blocks
        self.block_table = torch.tensor([[3, 0], [1, 2]], dtype=torch.int32)
        self.k_cache = torch.zeros(4, self.block, 2 * 16)
        self.v_cache = torch.zeros(4, self.block, 2 * 16)
        for b in range(2):
            for j in range(2):
                blk = int(self.block_table[b, j])
                span = slice(j * self.block, (j + 1) * self.block)
                self.k_cache[blk] = self.k[b, :, span].transpose(0, 1).reshape(self.block, -1)
                self.v_cache[blk] = self.v[b, :, span].transpose(0, 1).reshape(self.block, -1)

    def reference(self, q):
        outs = []
        for b, n in enumerate(self.kv_lens):
            o, _ = direct.attention(q[b], self.k[b, :, :n], self.v[b, :, :n], 0.25)
            outs.append(o)
        return torch.stack(outs).float()

    def test_paged_decode_bsh_cache(self):
        q = torch.randn(2, 4, 1, 16)
        out = fia(q, self.k_cache, self.v_cache, num_heads=4, num_key_value_heads=2,
                  input_layout="BNSD", scale=0.25, block_table=self.block_table,
                  block_size=self.block, actual_seq_lengths_kv=self.kv_lens)[0]
        torch.testing.assert_close(out, self.reference(q), **TOL)

    def test_paged_decode_bnsd_cache_and_ifa(self):
        q = torch.randn(2, 4, 1, 16)
        k4 = self.k_cache.reshape(4, self.block, 2, 16).transpose(1, 2).contiguous()
        v4 = self.v_cache.reshape(4, self.block, 2, 16).transpose(1, 2).contiguous()
        out = fia(q, k4, v4, num_heads=4, num_key_value_heads=2, input_layout="BNSD", scale=0.25,
                  block_table=self.block_table, block_size=self.block,
                  actual_seq_lengths_kv=self.kv_lens)[0]
        torch.testing.assert_close(out, self.reference(q), **TOL)
        out_ifa = npu_incre_flash_attention(q, k4, v4, num_heads=4, num_key_value_heads=2,
                                            input_layout="BNSD", scale_value=0.25,
                                            block_table=self.block_table, block_size=self.block,
                                            actual_seq_lengths=self.kv_lens)
        torch.testing.assert_close(out_ifa, out, **TOL)

    def test_paged_needs_kv_lengths_and_valid_block_size(self):
        q = torch.randn(2, 4, 1, 16)
        with self.assertRaisesRegex(ValueError, "actual_seq_lengths_kv"):
            fia(q, self.k_cache, self.v_cache, num_heads=4, num_key_value_heads=2,
                input_layout="BNSD", block_table=self.block_table, block_size=self.block)
        with self.assertRaisesRegex(ValueError, "needs block_size"):
            fia(q, self.k_cache, self.v_cache, num_heads=4, num_key_value_heads=2,
                input_layout="BNSD", block_table=self.block_table, actual_seq_lengths_kv=[3, 4])
        q2 = torch.randn(2, 4, 2, 16)
        k = self.k_cache.reshape(8, 64, 32)
        with self.assertRaisesRegex(ValueError, "block_size"):
            fia(q2, k, k, num_heads=4, num_key_value_heads=2, input_layout="BNSD",
                block_table=torch.tensor([[0, 1, 2], [3, 4, 5]], dtype=torch.int32),
                block_size=64, actual_seq_lengths_kv=[100, 30])

    def test_zero_kv_length_gives_zero_rows(self):
        q = torch.randn(2, 4, 1, 16)
        out = fia(q, self.k, self.v, num_heads=4, num_key_value_heads=2, input_layout="BNSD",
                  scale=0.25, actual_seq_lengths_kv=[0, 40])[0]
        self.assertEqual(float(out[0].abs().sum()), 0.0)
        torch.testing.assert_close(out[1], self.reference(q)[1], **TOL)

    def test_dense_actual_lengths_pad_with_zero(self):
        q = torch.randn(2, 4, 3, 16)
        out = fia(q, self.k, self.v, num_heads=4, num_key_value_heads=2, input_layout="BNSD",
                  scale=0.25, actual_seq_lengths=[3, 2], actual_seq_lengths_kv=self.kv_lens)[0]
        ref = self.reference(q)
        torch.testing.assert_close(out[0], ref[0], **TOL)
        torch.testing.assert_close(out[1, :, :2], ref[1, :, :2], **TOL)
        self.assertEqual(float(out[1, :, 2].abs().sum()), 0.0)


class DecodeBranch(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(7)
        self.q = torch.randn(2, 1, 4 * 16)  # BSH, Q_S = 1
        self.k = torch.randn(2, 6, 2 * 16)
        self.v = torch.randn(2, 6, 2 * 16)

    def reference(self, allowed_rows=None):
        q = self.q.reshape(2, 1, 4, 16).transpose(1, 2)
        k = self.k.reshape(2, 6, 2, 16).transpose(1, 2)
        v = self.v.reshape(2, 6, 2, 16).transpose(1, 2)
        outs = []
        for b in range(2):
            allowed = allowed_rows[b].reshape(1, 6) if allowed_rows is not None else None
            outs.append(direct.attention(q[b], k[b], v[b], 0.25, allowed)[0])
        return torch.stack(outs).transpose(1, 2).reshape(2, 1, 64).float()

    def test_batch_by_kv_mask_for_single_token_queries(self):
        mask = torch.zeros(2, 6, dtype=torch.bool)
        mask[0, 4:] = True
        mask[1, :2] = True
        out = fia(self.q, self.k, self.v, num_heads=4, num_key_value_heads=2, scale=0.25,
                  atten_mask=mask)[0]
        torch.testing.assert_close(out, self.reference(~mask), **TOL)
        ifa = npu_incre_flash_attention(self.q, self.k, self.v, num_heads=4, num_key_value_heads=2,
                                        scale_value=0.25, atten_mask=mask)
        torch.testing.assert_close(ifa, out, **TOL)

    def test_sparse_mode_is_ignored_for_single_token_queries(self):
        out = fia(self.q, self.k, self.v, num_heads=4, num_key_value_heads=2, scale=0.25,
                  sparse_mode=3, pre_tokens=1, next_tokens=0)[0]
        torch.testing.assert_close(out, self.reference(), **TOL)

    def test_compressed_mask_is_refused_for_single_token_queries(self):
        # sparse_mode is ignored at Q_S = 1, so the 2048 x 2048 mask is no longer a
        # compressed causal mask there: a prefill call reused for decode must drop it.
        with self.assertRaisesRegex(ConstraintError, "incremental path"):
            fia(self.q, self.k, self.v, num_heads=4, num_key_value_heads=2, scale=0.25,
                atten_mask=direct.optimized_mask(), sparse_mode=3)


class MlaAbsorb(unittest.TestCase):
    def test_mla_paged_decode_matches_concatenated_direct(self):
        torch.manual_seed(4)
        n, block, lens = 4, 16, [20, 7]
        q = torch.randn(2, 1, n, 512)  # BSND
        q_rope = torch.randn(2, 1, n, 64)
        kv = torch.randn(2, 32, 512)
        kr = torch.randn(2, 32, 64)
        table = torch.tensor([[2, 0], [1, 3]], dtype=torch.int32)
        cache = torch.zeros(4, block, 1, 512)
        rcache = torch.zeros(4, block, 1, 64)
        for b in range(2):
            for j in range(2):
                cache[table[b, j], :, 0] = kv[b, j * block:(j + 1) * block]
                rcache[table[b, j], :, 0] = kr[b, j * block:(j + 1) * block]
        cache_bsh, rcache_bsh = cache.flatten(2), rcache.flatten(2)
        out = fia(q, cache_bsh, cache_bsh, query_rope=q_rope, key_rope=rcache_bsh, num_heads=n,
                  num_key_value_heads=1, input_layout="BSND", scale=0.05, block_table=table,
                  block_size=block, actual_seq_lengths_kv=lens)[0]
        # the (blocknum, blocksize, 1, D) caches written by mla_prolog read the same
        out4 = fia_v2(q, cache, cache, query_rope=q_rope, key_rope=rcache, num_query_heads=n,
                      num_key_value_heads=1, input_layout="BSND", softmax_scale=0.05,
                      block_table=table, block_size=block, actual_seq_kvlen=lens)[0]
        torch.testing.assert_close(out4, out)
        for b, length in enumerate(lens):
            qcat = torch.cat([q[b, 0], q_rope[b, 0]], -1).unsqueeze(1)  # (N, 1, 576)
            kcat = torch.cat([kv[b, :length], kr[b, :length]], -1).unsqueeze(0)
            ref, _ = direct.attention(qcat, kcat, kv[b, :length].unsqueeze(0), 0.05)
            torch.testing.assert_close(out[b, 0], ref[:, 0].float(), **TOL)

    def test_rope_with_head_dim_128_in_tnd(self):
        torch.manual_seed(8)
        q, qr = torch.randn(5, 2, 128), torch.randn(5, 2, 64)
        k, kr, v = torch.randn(7, 2, 128), torch.randn(7, 2, 64), torch.randn(7, 2, 128)
        out = fia(q, k, v, query_rope=qr, key_rope=kr, num_heads=2, input_layout="TND", scale=0.1,
                  actual_seq_lengths=[2, 5], actual_seq_lengths_kv=[3, 7], sparse_mode=3,
                  atten_mask=direct.optimized_mask())[0]
        for (qa, qb), (ka, kb) in (((0, 2), (0, 3)), ((2, 5), (3, 7))):
            qcat = torch.cat([q[qa:qb], qr[qa:qb]], -1).transpose(0, 1)
            kcat = torch.cat([k[ka:kb], kr[ka:kb]], -1).transpose(0, 1)
            ref, _ = direct.attention(qcat, kcat, v[ka:kb].transpose(0, 1), 0.1,
                                      direct.causal_right_down(qb - qa, kb - ka))
            torch.testing.assert_close(out[qa:qb], ref.transpose(0, 1).float(), **TOL)
        with self.assertRaisesRegex(ValueError, "all be 128"):
            fia(q, k, v[..., :64], query_rope=qr, key_rope=kr, num_heads=2, input_layout="TND",
                actual_seq_lengths=[2, 5], actual_seq_lengths_kv=[3, 7])

    def test_mla_512_takes_128_query_heads_over_one_kv_head(self):
        # Its own section of the constraints: N in {1, ..., 128} with KV N = 1,
        # above the general group limit of 64, which still holds without rope.
        torch.manual_seed(9)
        n, s = 128, 5
        q, qr = torch.randn(1, 1, n, 512), torch.randn(1, 1, n, 64)
        kv, kr = torch.randn(1, s, 1, 512), torch.randn(1, s, 1, 64)
        out = fia_v2(q, kv, kv, query_rope=qr, key_rope=kr, num_query_heads=n, num_key_value_heads=1,
                     input_layout="BSND", softmax_scale=0.04)[0]
        qcat = torch.cat([q[0, 0], qr[0, 0]], -1).unsqueeze(1)  # (N, 1, 576)
        kcat = torch.cat([kv[0, :, 0], kr[0, :, 0]], -1).unsqueeze(0)
        ref, _ = direct.attention(qcat, kcat, kv[0, :, 0].unsqueeze(0), 0.04)
        torch.testing.assert_close(out[0, 0], ref[:, 0].float(), **TOL)
        with self.assertRaisesRegex(ValueError, "<= 64"):
            fia_v2(q[..., :128], kv[..., :128], kv[..., :128], num_query_heads=n, num_key_value_heads=1,
                   input_layout="BSND")

    def test_mla_constraints(self):
        q = torch.randn(1, 1, 4, 256)
        with self.assertRaisesRegex(ValueError, "512 or 128"):
            fia(q, q[:, :, :1], q[:, :, :1], query_rope=torch.randn(1, 1, 4, 64),
                key_rope=torch.randn(1, 1, 1, 64), num_heads=4, num_key_value_heads=1,
                input_layout="BSND")
        with self.assertRaisesRegex(ValueError, "both"):
            fia(q, q, q, query_rope=torch.randn(1, 1, 4, 64), num_heads=4, input_layout="BSND")


class HeadRules(unittest.TestCase):
    def test_gqa_ratio_and_divisibility(self):
        q = torch.randn(1, 65, 2, 16)
        kv = torch.randn(1, 1, 2, 16)
        with self.assertRaisesRegex(ValueError, "<= 64"):
            fia(q, kv, kv, num_heads=65, num_key_value_heads=1, input_layout="BNSD")
        q = torch.randn(1, 6, 2, 16)
        kv = torch.randn(1, 4, 2, 16)
        with self.assertRaisesRegex(ValueError, "% num_key_value_heads"):
            fia(q, kv, kv, num_heads=6, num_key_value_heads=4, input_layout="BNSD")

    def test_num_heads_must_match_bnsd(self):
        q = torch.randn(1, 4, 2, 16)
        with self.assertRaisesRegex(ValueError, "num_heads"):
            fia(q, q, q, num_heads=1, input_layout="BNSD")

    def test_quantisation_is_not_modelled(self):
        q = torch.randn(1, 2, 2, 16)
        with self.assertRaises(NotImplementedError):
            fia(q, q, q, num_heads=2, input_layout="BNSD", quant_scale2=torch.ones(1))
        with self.assertRaises(NotImplementedError):
            fia_v2(q, q, q, num_query_heads=2, input_layout="BNSD", sparse_mode=9)

    def test_constraint_error_is_value_error(self):
        self.assertTrue(issubclass(ConstraintError, ValueError))


class V2AndPromptAttention(unittest.TestCase):
    def test_v2_renamed_parameters_equal_v1(self):
        torch.manual_seed(5)
        q, k, v = torch.randn(2, 4, 16), torch.randn(2, 6, 16), torch.randn(2, 6, 16)
        q, k, v = q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0)
        a = fia(q, k, v, num_heads=2, scale=0.3, input_layout="BNSD", actual_seq_lengths_kv=[5],
                softmax_lse_flag=True)
        b = fia_v2(q, k, v, num_query_heads=2, softmax_scale=0.3, input_layout="BNSD",
                   actual_seq_kvlen=[5], return_softmax_lse=True)
        torch.testing.assert_close(a[0], b[0])
        torch.testing.assert_close(a[1], b[1])

    def test_pfa_next_tokens_defaults_to_zero(self):
        torch.manual_seed(6)
        q, k, v = torch.randn(1, 2, 4, 16), torch.randn(1, 2, 4, 16), torch.randn(1, 2, 4, 16)
        no_mask = torch.zeros(4, 4, dtype=torch.bool)
        out = npu_prompt_flash_attention(q, k, v, atten_mask=no_mask, num_heads=2,
                                         scale_value=0.25, input_layout="BNSD")
        ref, _ = bnsd_reference(q, k, v, 0.25, direct.causal_left_up)
        torch.testing.assert_close(out, ref, **TOL)


if __name__ == "__main__":
    unittest.main()
