"""Lightning indexer and sparse flash attention against direct gather + softmax."""
import unittest

import torch

from npufuse_ref import sparse
from tests import direct


class LightningIndexer(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.q = torch.randn(1, 4, 8, 128)  # B, S1, N1, D
        self.k = torch.randn(1, 6, 1, 128)
        self.w = torch.randn(1, 4, 8)

    def scores(self):
        s = torch.relu(torch.einsum("bsnd,btd->bsnt", self.q.double(), self.k[:, :, 0].double()))
        return (s * self.w.double().unsqueeze(-1)).sum(2)  # (B, S1, S2)

    def test_causal_topk_with_padding(self):
        idx, _ = sparse.npu_lightning_indexer(self.q, self.k, self.w, sparse_count=4)
        self.assertEqual(tuple(idx.shape), (1, 4, 1, 4))
        scores = self.scores()[0]
        for i in range(4):
            visible = 6 - 4 + i + 1
            want = torch.argsort(-scores[i, :visible])[:4].tolist()
            got = [v for v in idx[0, i, 0].tolist() if v >= 0]
            self.assertEqual(got, want)
            self.assertEqual(len(got), min(4, visible))

    def test_return_values_and_mode0(self):
        idx, vals = sparse.npu_lightning_indexer(self.q, self.k, self.w, sparse_count=6,
                                                 sparse_mode=0, return_value=True)
        scores = self.scores()[0]
        for i in range(4):
            torch.testing.assert_close(vals[0, i, 0].double(), scores[i][idx[0, i, 0].long()],
                                       atol=1e-4, rtol=1e-5)

    def test_constraints(self):
        with self.assertRaisesRegex(ValueError, "128"):
            sparse.npu_lightning_indexer(torch.randn(1, 1, 2, 64), torch.randn(1, 3, 1, 64),
                                         torch.randn(1, 1, 2))
        with self.assertRaisesRegex(ValueError, "N2 must be 1"):
            sparse.npu_lightning_indexer(self.q, torch.randn(1, 6, 2, 128), self.w)
        with self.assertRaisesRegex(ValueError, "sparse_count"):
            sparse.npu_lightning_indexer(self.q, self.k, self.w, sparse_count=3000)


class QuantLightningIndexer(unittest.TestCase):
    def test_dequantised_scores_pick_the_same_indices(self):
        torch.manual_seed(2)
        q = torch.randint(-20, 20, (1, 3, 4, 128), dtype=torch.int8)
        k = torch.randint(-20, 20, (1, 9, 1, 128), dtype=torch.int8)
        w = torch.randn(1, 3, 4).half()
        sq, sk = torch.rand(1, 3, 4).half(), torch.rand(1, 9, 1).half()
        idx = sparse.npu_quant_lightning_indexer(q, k, w, sq, sk, 0, 0, sparse_count=5)
        raw = torch.einsum("bsnd,btd->bsnt", q.double(), k[:, :, 0].double())
        scores = torch.relu(raw * sq.double().unsqueeze(-1) * sk[:, :, 0].double().reshape(1, 1, 1, 9))
        scores = (scores * w.double().unsqueeze(-1)).sum(2)[0]
        for i in range(3):
            visible = 9 - 3 + i + 1
            want = torch.argsort(-scores[i, :visible])[:5].tolist()
            self.assertEqual(idx[0, i, 0].tolist(), want)


class SparseFlashAttention(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(1)
        self.n1, self.s1, self.s2 = 2, 3, 10
        self.q = torch.randn(1, self.s1, self.n1, 512)
        self.qr = torch.randn(1, self.s1, self.n1, 64)
        self.kv = torch.randn(1, self.s2, 1, 512)
        self.kr = torch.randn(1, self.s2, 1, 64)

    def direct_rows(self, positions_per_row, scale):
        out = []
        for i, pos in enumerate(positions_per_row):
            p = torch.tensor(pos)
            qcat = torch.cat([self.q[0, i], self.qr[0, i]], -1).unsqueeze(1)  # (N1, 1, 576)
            kcat = torch.cat([self.kv[0, p, 0], self.kr[0, p, 0]], -1).unsqueeze(0)
            o, _ = direct.attention(qcat, kcat, self.kv[0, p, 0].unsqueeze(0), scale)
            out.append(o[:, 0])
        return torch.stack(out).float()

    def test_token_sparse_causal(self):
        idx = torch.tensor([[[9, 2, 4, -1]], [[1, 8, 0, -1]], [[3, 9, 5, 7]]], dtype=torch.int32)
        out, smax, ssum = sparse.npu_sparse_flash_attention(
            self.q, self.kv, self.kv, idx.unsqueeze(0), 0.04, query_rope=self.qr,
            key_rope=self.kr, attention_mode=2, return_softmax_lse=True)
        # right-down causal with S1=3, S2=10: row i sees positions <= 7 + i
        want = self.direct_rows([[2, 4], [1, 8, 0], [3, 9, 5, 7]], 0.04)
        torch.testing.assert_close(out[0], want, atol=1e-5, rtol=1e-5)
        self.assertEqual(tuple(smax.shape), (1, 1, 3, 2))

    def test_block_sparse_indices(self):
        idx = torch.tensor([[[0, 3]], [[4, -1]], [[1, 2]]], dtype=torch.int32)
        out = sparse.npu_sparse_flash_attention(
            self.q, self.kv, self.kv, idx.unsqueeze(0), 0.04, query_rope=self.qr,
            key_rope=self.kr, attention_mode=2, sparse_block_size=2, sparse_mode=0)[0]
        want = self.direct_rows([[0, 1, 6, 7], [8, 9], [2, 3, 4, 5]], 0.04)
        torch.testing.assert_close(out[0], want, atol=1e-5, rtol=1e-5)

    def test_paged_kv(self):
        cache = torch.zeros(2, 16, 1, 512)
        rcache = torch.zeros(2, 16, 1, 64)
        cache[1, :10] = self.kv[0]
        rcache[1, :10] = self.kr[0]
        idx = torch.tensor([[[0, 1]], [[5, -1]], [[9, 3]]], dtype=torch.int32).unsqueeze(0)
        out = sparse.npu_sparse_flash_attention(
            self.q, cache, cache, idx, 0.04, query_rope=self.qr, key_rope=rcache,
            block_table=torch.tensor([[1]], dtype=torch.int32),
            actual_seq_lengths_kv=torch.tensor([10], dtype=torch.int32), layout_kv="PA_BSND",
            attention_mode=2)[0]
        want = self.direct_rows([[0, 1], [5], [9, 3]], 0.04)
        torch.testing.assert_close(out[0], want, atol=1e-5, rtol=1e-5)

    def test_constraints(self):
        idx = torch.zeros(1, 3, 1, 1, dtype=torch.int32)
        with self.assertRaisesRegex(ValueError, "attention_mode"):
            sparse.npu_sparse_flash_attention(self.q, self.kv, self.kv, idx, 1.0,
                                              query_rope=self.qr, key_rope=self.kr)
        q = torch.randn(1, 3, 2, 128)
        kv = torch.randn(1, 10, 1, 128)
        with self.assertRaisesRegex(ValueError, "512"):
            sparse.npu_sparse_flash_attention(q, kv, kv, idx, 1.0, query_rope=self.qr,
                                              key_rope=self.kr, attention_mode=2)
        with self.assertRaisesRegex(ValueError, "not a Python list"):
            sparse.npu_sparse_flash_attention(self.q, self.kv, self.kv, idx, 1.0,
                                              query_rope=self.qr, key_rope=self.kr, attention_mode=2,
                                              actual_seq_lengths_kv=[10])
        with self.assertRaisesRegex(ValueError, "int32"):
            sparse.npu_sparse_flash_attention(self.q, self.kv, self.kv, idx.long(), 1.0,
                                              query_rope=self.qr, key_rope=self.kr, attention_mode=2)
        with self.assertRaisesRegex(ValueError, "power of 2"):
            sparse.npu_sparse_flash_attention(self.q, self.kv, self.kv, idx, 1.0,
                                              query_rope=self.qr, key_rope=self.kr,
                                              attention_mode=2, sparse_block_size=3)


def c8_rows(nope, rope):
    """Combined C8 cache rows built the way the operator doc's example builds them."""
    tiles = nope.float().reshape(*nope.shape[:-1], 4, 128)
    scales = tiles.abs().amax(-1) / 127.0
    q = torch.round(tiles / scales.unsqueeze(-1)).clamp(-127, 127).to(torch.int8).reshape(nope.shape)
    return torch.cat((q, rope.contiguous().view(torch.int8), scales.contiguous().view(torch.int8)), dim=-1), scales


class KvQuantSparseFlashAttention(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(3)
        self.n1, self.s1, self.s2 = 4, 2, 12
        self.q = torch.randn(1, self.s1, self.n1, 576).bfloat16()
        self.nope = torch.randn(1, self.s2, 1, 512)
        self.rope = torch.randn(1, self.s2, 1, 64).bfloat16()
        self.rows, self.scales = c8_rows(self.nope, self.rope)

    def dequantised(self):
        ints = self.rows[..., :512].float().reshape(1, self.s2, 1, 4, 128)
        return (ints * self.scales.unsqueeze(-1)).reshape(1, self.s2, 1, 512)

    def direct_rows(self, positions_per_row, scale):
        deq, out = self.dequantised(), []
        for i, pos in enumerate(positions_per_row):
            p = torch.tensor(pos)
            kcat = torch.cat([deq[0, p, 0], self.rope[0, p, 0].float()], -1).unsqueeze(0)
            o, _ = direct.attention(self.q[0, i].float().unsqueeze(1), kcat, deq[0, p, 0].unsqueeze(0), scale)
            out.append(o[:, 0])
        return torch.stack(out).float()

    def test_rows_dequantise_per_tile(self):
        deq = self.dequantised()
        # int8 rounding moves a value by at most half a step of its own tile
        step = self.scales.repeat_interleave(128, dim=-1)
        self.assertTrue(bool(((deq - self.nope).abs() <= step / 2 + 1e-6).all()))
        self.assertEqual(self.rows.shape[-1], 656)

    def test_causal_sparse_rows(self):
        idx = torch.tensor([[[3, 10, 0, -1]], [[11, 2, 7, 5]]], dtype=torch.int32).unsqueeze(0)
        out = sparse.npu_kv_quant_sparse_flash_attention(
            self.q, self.rows, self.rows, idx, 0.05, 2, 2, attention_mode=2)
        self.assertEqual(out.dtype, torch.bfloat16)
        self.assertEqual(tuple(out.shape), (1, self.s1, self.n1, 512))
        # right-down causal, S1 = 2, S2 = 12: row 0 sees positions <= 10, row 1 all
        want = self.direct_rows([[3, 10, 0], [11, 2, 7, 5]], 0.05)
        torch.testing.assert_close(out[0].float(), want, atol=2e-2, rtol=2e-2)

    def test_paged_rows(self):
        cache = torch.zeros(3, 16, 1, 656, dtype=torch.int8)
        cache[2, :self.s2] = self.rows[0]
        idx = torch.tensor([[[1, 4]], [[9, -1]]], dtype=torch.int32).unsqueeze(0)
        out = sparse.npu_kv_quant_sparse_flash_attention(
            self.q, cache, cache, idx, 0.05, 2, 2, attention_mode=2, layout_kv="PA_BSND",
            block_table=torch.tensor([[2]], dtype=torch.int32),
            actual_seq_lengths_kv=torch.tensor([self.s2], dtype=torch.int32))
        want = self.direct_rows([[1, 4], [9]], 0.05)
        torch.testing.assert_close(out[0].float(), want, atol=2e-2, rtol=2e-2)

    def test_constraints(self):
        idx = torch.zeros(1, self.s1, 1, 1, dtype=torch.int32)
        call = sparse.npu_kv_quant_sparse_flash_attention
        with self.assertRaisesRegex(ValueError, "attention_mode"):
            call(self.q, self.rows, self.rows, idx, 1.0, 2, 2)
        with self.assertRaisesRegex(ValueError, "per-tile"):
            call(self.q, self.rows, self.rows, idx, 1.0, 1, 2, attention_mode=2)
        with self.assertRaisesRegex(ValueError, "bfloat16 or float16"):
            call(self.q.float(), self.rows, self.rows, idx, 1.0, 2, 2, attention_mode=2)
        with self.assertRaisesRegex(ValueError, "576"):
            call(self.q[..., :512], self.rows, self.rows, idx, 1.0, 2, 2, attention_mode=2)
        with self.assertRaisesRegex(ValueError, "656"):
            call(self.q, self.rows[..., :640], self.rows[..., :640], idx, 1.0, 2, 2, attention_mode=2)
        with self.assertRaisesRegex(ValueError, "tile_size"):
            call(self.q, self.rows, self.rows, idx, 1.0, 2, 2, attention_mode=2, tile_size=64)
        with self.assertRaisesRegex(ValueError, r"\[1, 16\]"):
            call(self.q, self.rows, self.rows, idx, 1.0, 2, 2, attention_mode=2, sparse_block_size=32)


if __name__ == "__main__":
    unittest.main()
