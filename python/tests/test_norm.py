"""RMSNorm family against x / sqrt(mean(x^2) + eps) * gamma in float64."""
import unittest

import torch

from npufuse_ref import norm
from tests import direct


class RmsNorm(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.x = torch.randn(2, 3, 64)
        self.g = torch.randn(64)

    def test_rms_norm_outputs_and_rstd(self):
        y, rstd = norm.npu_rms_norm(self.x, self.g, epsilon=1e-5)
        torch.testing.assert_close(y, direct.rms_norm(self.x, self.g, 1e-5).float())
        self.assertEqual(tuple(rstd.shape), (2, 3, 1))
        self.assertEqual(rstd.dtype, torch.float32)
        want = 1 / torch.sqrt((self.x.double() ** 2).mean(-1, keepdim=True) + 1e-5)
        torch.testing.assert_close(rstd, want.float())

    def test_two_dim_gamma_normalises_two_axes(self):
        g = torch.randn(3, 64)
        y, rstd = norm.npu_rms_norm(self.x, g)
        flat = self.x.double().reshape(2, -1)
        want = flat / torch.sqrt((flat ** 2).mean(-1, keepdim=True) + 1e-6)
        torch.testing.assert_close(y, (want.reshape(2, 3, 64) * g.double()).float())
        self.assertEqual(tuple(rstd.shape), (2, 1, 1))

    def test_bf16_input_fp32_gamma_returns_bf16(self):
        y, _ = norm.npu_rms_norm(self.x.bfloat16(), self.g)
        self.assertEqual(y.dtype, torch.bfloat16)
        torch.testing.assert_close(y.float(), direct.rms_norm(self.x.bfloat16(), self.g, 1e-6).float(),
                                   atol=2e-2, rtol=2e-2)

    def test_gamma_dtype_pairs(self):
        norm.npu_rms_norm(self.x.half(), self.g)  # float16 x with float32 gamma is allowed
        with self.assertRaisesRegex(ValueError, "gamma dtype"):
            norm.npu_rms_norm(self.x, self.g.bfloat16())
        with self.assertRaisesRegex(ValueError, "share one dtype"):
            norm.npu_add_rms_norm(self.x.bfloat16(), self.x.bfloat16(), self.g)

    def test_gamma_shape_must_match_trailing_axes(self):
        with self.assertRaisesRegex(ValueError, "gamma"):
            norm.npu_rms_norm(self.x, torch.randn(32))

    def test_add_rms_norm_returns_norm_rstd_and_residual(self):
        x2 = torch.randn(2, 3, 64)
        y, rstd, x = norm.npu_add_rms_norm(self.x, x2, self.g)
        torch.testing.assert_close(x, self.x + x2)
        torch.testing.assert_close(y, direct.rms_norm(self.x + x2, self.g, 1e-6).float())
        self.assertEqual(tuple(rstd.shape), (2, 3, 1))

    def test_gemma_rms_norm_uses_one_plus_gamma(self):
        y, _ = norm.npu_gemma_rms_norm(self.x, self.g)
        torch.testing.assert_close(y, direct.rms_norm(self.x, 1 + self.g, 1e-6).float())

    def test_add_rms_norm_quant_divides_by_scale(self):
        x2 = torch.randn(2, 3, 64)
        scale = torch.rand(64) * 0.05 + 0.01
        zp = torch.randint(-3, 3, (64,)).float()
        y1, y2, x = norm.npu_add_rms_norm_quant(self.x, x2, self.g, scale, zp)
        ref = direct.rms_norm(self.x + x2, self.g, 1e-6) / scale.double() + zp.double()
        self.assertEqual(y1.dtype, torch.int8)
        self.assertLessEqual(float((y1.double() - ref.round().clamp(-128, 127)).abs().max()), 1.0)

    def test_add_rms_norm_dynamic_quant_per_row_scale(self):
        x2 = torch.randn(2, 3, 64)
        y1, y2, x, s1, s2 = norm.npu_add_rms_norm_dynamic_quant(self.x, x2, self.g)
        ref = direct.rms_norm(self.x + x2, self.g, 1e-6)
        torch.testing.assert_close(s1.double(), ref.abs().amax(-1) / 127)
        torch.testing.assert_close(y1.double() * s1.double().unsqueeze(-1), ref, atol=s1.max().item(), rtol=0)
        self.assertEqual(y2.numel(), 0)


if __name__ == "__main__":
    unittest.main()
