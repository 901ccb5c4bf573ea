"""npu_fusion_attention and npu_scaled_masked_softmax against direct formulations."""
import unittest

import torch

from npufuse_ref.attention import npu_fusion_attention, npu_scaled_masked_softmax
from tests import direct

TOL = dict(atol=1e-5, rtol=1e-5)


class FusionAttention(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.q = torch.randn(2, 4, 6, 24)  # BNSD, D not a multiple of 16 (allowed here)
        self.k = torch.randn(2, 2, 6, 24)
        self.v = torch.randn(2, 2, 6, 16)  # Dv < Dk

    def reference(self, scale, allowed=None, pse=None):
        outs = []
        for b in range(2):
            extra = pse[b] if pse is not None else None  # pse is added before scaling
            o, _ = direct.attention(self.q[b], self.k[b], self.v[b], scale, allowed, extra_scores=extra)
            outs.append(o)
        return torch.stack(outs).float()

    def test_causal_with_pse_and_statistics(self):
        pse = torch.randn(2, 4, 6, 6)
        out, smax, ssum, _, seed, offset, length = npu_fusion_attention(
            self.q, self.k, self.v, 4, "BNSD", pse=pse, atten_mask=direct.optimized_mask(),
            scale=0.2, sparse_mode=3)
        allowed = direct.causal_right_down(6, 6)
        torch.testing.assert_close(out, self.reference(0.2, allowed, pse), **TOL)
        self.assertEqual(tuple(smax.shape), (2, 4, 6, 8))
        # softmax_sum * exp(softmax_max) = sum of exp(scores): check it against logsumexp
        k = self.k.repeat_interleave(2, 1)
        scores = (0.2 * (self.q.double() @ k.double().transpose(-1, -2) + pse.double()))
        scores = scores.masked_fill(~allowed, float("-inf"))
        lse = torch.logsumexp(scores, -1)
        torch.testing.assert_close((smax[..., 0].double() + ssum[..., 0].double().log()), lse,
                                   **TOL)
        self.assertEqual((seed, offset, length), (0, 0, 0))

    def test_sbh_layout_matches_bnsd(self):
        q = self.q.permute(2, 0, 1, 3).reshape(6, 2, 96)
        k = self.k.permute(2, 0, 1, 3).reshape(6, 2, 48)
        v = self.v.permute(2, 0, 1, 3).reshape(6, 2, 32)
        out = npu_fusion_attention(q, k, v, 4, "SBH", scale=0.3)[0]
        want = self.reference(0.3).permute(2, 0, 1, 3).reshape(6, 2, 64)
        torch.testing.assert_close(out, want, **TOL)

    def test_tnd_with_trailing_zero_batches(self):
        q, k, v = torch.randn(5, 2, 16), torch.randn(7, 2, 16), torch.randn(7, 2, 16)
        out = npu_fusion_attention(q, k, v, 2, "TND", scale=0.25, actual_seq_qlen=[2, 5, 0],
                                   actual_seq_kvlen=[3, 7, 0])[0]
        for (qa, qb), (ka, kb) in (((0, 2), (0, 3)), ((2, 5), (3, 7))):
            ref, _ = direct.attention(q[qa:qb].transpose(0, 1), k[ka:kb].transpose(0, 1),
                                      v[ka:kb].transpose(0, 1), 0.25)
            torch.testing.assert_close(out[qa:qb], ref.transpose(0, 1).float(), **TOL)

    def test_unmodelled_and_misused(self):
        with self.assertRaises(NotImplementedError):
            npu_fusion_attention(self.q, self.k, self.v, 4, "BNSD", keep_prob=0.9)
        with self.assertRaisesRegex(ValueError, "2048"):
            npu_fusion_attention(self.q, self.k, self.v, 4, "BNSD", sparse_mode=2)


class ScaledMaskedSoftmax(unittest.TestCase):
    def test_masked_softmax(self):
        torch.manual_seed(1)
        x = torch.randn(1, 2, 32, 64)
        mask = torch.rand(1, 1, 32, 64) > 0.7
        y = npu_scaled_masked_softmax(x, mask, scale=0.5)
        want = torch.softmax((x.double() * 0.5).masked_fill(mask, float("-inf")), -1)
        torch.testing.assert_close(y.double(), want, atol=1e-6, rtol=1e-5)
        with self.assertRaisesRegex(ValueError, "multiples of 32"):
            npu_scaled_masked_softmax(torch.randn(1, 1, 1, 64), torch.zeros(1, 1, 1, 64, dtype=torch.bool))


if __name__ == "__main__":
    unittest.main()
