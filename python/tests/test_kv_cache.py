"""Cache writes against explicit index assignment, including the doc's scatter_update_ example."""
import unittest

import torch

from npufuse_ref import kv_cache


class ScatterUpdate(unittest.TestCase):
    def test_doc_example(self):
        data = torch.tensor([[[[1] * 8, [2] * 8]]], dtype=torch.float32)
        indices = torch.tensor([1], dtype=torch.int64)
        updates = torch.tensor([[[[3] * 8]]], dtype=torch.float32)
        out = kv_cache.scatter_update_(data, indices, updates, axis=-2)
        self.assertIs(out, data)
        self.assertEqual(data.tolist(), [[[[1.0] * 8, [3.0] * 8]]])

    def test_prefill_writes_a_span_per_batch(self):
        cache = torch.zeros(2, 3, 10, 4)  # B, N, S_max, D
        upd = torch.randn(2, 3, 4, 4)
        kv_cache.scatter_update_(cache, torch.tensor([2, 5]), upd, -2)
        want = torch.zeros(2, 3, 10, 4)
        want[0, :, 2:6] = upd[0]
        want[1, :, 5:9] = upd[1]
        torch.testing.assert_close(cache, want)

    def test_out_of_range_is_rejected(self):
        with self.assertRaisesRegex(ValueError, "exceeds"):
            kv_cache.scatter_update_(torch.zeros(1, 4, 2), torch.tensor([3]), torch.zeros(1, 2, 2), 1)


class ScatterNdUpdate(unittest.TestCase):
    def test_paged_slot_write(self):
        cache = torch.zeros(4 * 8, 2, 16)  # (blocks * block_size, kv_heads, head_dim)
        slots = torch.tensor([5, 17, 30])
        k = torch.randn(3, 2, 16)
        out = kv_cache.npu_scatter_nd_update_(cache, slots.view(-1, 1), k)
        self.assertIs(out, cache)
        want = torch.zeros(32, 2, 16)
        want[slots] = k
        torch.testing.assert_close(cache, want)

    def test_two_level_indices_and_shape_rule(self):
        data = torch.zeros(4, 5, 6)
        idx = torch.tensor([[0, 1], [3, 4], [2, 0]])
        upd = torch.randn(3, 6)
        out = kv_cache.npu_scatter_nd_update(data, idx, upd)
        self.assertEqual(float(data.abs().sum()), 0.0)
        for row, (i, j) in enumerate(idx.tolist()):
            torch.testing.assert_close(out[i, j], upd[row])
        with self.assertRaisesRegex(ValueError, "updates.shape"):
            kv_cache.npu_scatter_nd_update_(data, idx, torch.randn(3, 5))


class ScatterPaKvCache(unittest.TestCase):
    def test_nd_cache_mode_norm(self):
        k, v = torch.randn(3, 2, 16), torch.randn(3, 2, 16)
        kc, vc = torch.zeros(2, 4, 2, 16), torch.zeros(2, 4, 2, 16)
        slots = torch.tensor([6, 1, 3], dtype=torch.int32)
        self.assertIsNone(kv_cache.npu_scatter_pa_kv_cache(k, v, kc, vc, slots, cache_mode="Norm"))
        for t, s in enumerate(slots.tolist()):
            torch.testing.assert_close(kc[s // 4, s % 4], k[t])
            torch.testing.assert_close(vc[s // 4, s % 4], v[t])

    def test_nz_cache_holds_the_token_in_16_wide_rows(self):
        k = torch.randn(2, 2, 32).half()
        kc = torch.zeros(3, 4, 8, 16, dtype=torch.float16)  # (blocks, N*D/16, block_size, 16)
        vc = torch.zeros_like(kc)
        kv_cache.npu_scatter_pa_kv_cache(k, k.clone(), kc, vc, torch.tensor([9, 0]))
        torch.testing.assert_close(kc[1, :, 1, :].reshape(-1), k[0].reshape(-1))
        torch.testing.assert_close(kc[0, :, 0, :].reshape(-1), k[1].reshape(-1))

    def test_slots_must_be_unique_and_in_range(self):
        k = torch.randn(2, 1, 16)
        kc = torch.zeros(1, 4, 1, 16)
        with self.assertRaisesRegex(ValueError, "unique"):
            kv_cache.npu_scatter_pa_kv_cache(k, k, kc, kc.clone(), torch.tensor([1, 1]), cache_mode="Norm")
        with self.assertRaisesRegex(ValueError, r"\[0, 3\]"):
            kv_cache.npu_scatter_pa_kv_cache(k, k, kc, kc.clone(), torch.tensor([1, 4]), cache_mode="Norm")


if __name__ == "__main__":
    unittest.main()
