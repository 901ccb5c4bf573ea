"""npu_group_quant, npu_dynamic_block_quant, npu_quant_matmul_gelu, npu_top_k_top_p."""
import math
import unittest

import torch

from npufuse_ref import quant, sampling


class GroupQuant(unittest.TestCase):
    def test_rows_use_their_group_scale(self):
        torch.manual_seed(0)
        x = torch.randn(5, 8)
        scale = torch.rand(2, 8) * 40
        y = quant.npu_group_quant(x, scale, torch.tensor([3, 5]), offset=torch.tensor([1.0]))
        v = torch.cat([x[:3].double() * scale[0].double(), x[3:].double() * scale[1].double()]) + 1
        self.assertEqual(y.tolist(), v.round().clamp(-128, 127).to(torch.int8).tolist())
        with self.assertRaisesRegex(ValueError, "group_index"):
            quant.npu_group_quant(x, scale, torch.tensor([3, 4]))


class DynamicBlockQuant(unittest.TestCase):
    def test_per_128_column_blocks(self):
        torch.manual_seed(1)
        x = torch.randn(3, 200).half()
        y, scale = quant.npu_dynamic_block_quant(x)
        self.assertEqual(tuple(scale.shape), (3, 2))
        for c0, c1, j in ((0, 128, 0), (128, 200, 1)):
            blk = x[:, c0:c1].double()
            s = blk.abs().amax(-1) / 127
            torch.testing.assert_close(scale[:, j].double(), s, atol=1e-7, rtol=1e-6)
            self.assertEqual(y[:, c0:c1].tolist(), (blk / s.unsqueeze(-1)).round().to(torch.int8).tolist())
        _, floor = quant.npu_dynamic_block_quant(x * 0, min_scale=0.5)
        self.assertTrue(bool((floor == 0.5).all()))


class QuantMatmulGelu(unittest.TestCase):
    def test_dequant_then_erf_gelu(self):
        torch.manual_seed(2)
        a = torch.randint(-10, 10, (3, 32), dtype=torch.int8)
        b = torch.randint(-10, 10, (32, 8), dtype=torch.int8)
        s1, s2 = torch.rand(3) * 0.01, torch.rand(8) * 0.1
        y = quant.npu_quant_matmul_gelu(a, b, s1, s2)
        z = a.double() @ b.double() * s2.double() * s1.double().unsqueeze(-1)
        want = 0.5 * z * (1 + torch.erf(z / math.sqrt(2)))
        self.assertEqual(y.dtype, torch.float16)
        torch.testing.assert_close(y.double(), want, atol=2e-3, rtol=2e-3)


class TopKTopP(unittest.TestCase):
    def test_filters_like_the_sorted_formulation(self):
        torch.manual_seed(3)
        logits = torch.randn(4, 20)
        p = torch.tensor([0.9, 0.5, 1.0, 0.01])
        k = torch.tensor([5, 20, 3, 10])
        out = sampling.npu_top_k_top_p(logits, p, k)
        for b in range(4):
            order = torch.argsort(logits[b], descending=True)
            kept = order[:int(k[b])]
            probs = torch.softmax(logits[b, kept].double(), -1)
            # the mass of entry i and everything smaller must exceed 1 - p; the top one always stays
            tail = torch.flip(torch.cumsum(torch.flip(probs, [0]), 0), [0])
            keep = [i for i in range(len(kept)) if tail[i] > 1 - float(p[b]) or i == 0]
            want = torch.full_like(logits[b], float("-inf"))
            want[kept[keep]] = logits[b, kept[keep]]
            torch.testing.assert_close(out[b], want)


if __name__ == "__main__":
    unittest.main()
