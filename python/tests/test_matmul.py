"""npu_transpose_batchmatmul against einsum; format helpers."""
import unittest

import torch

from npufuse_ref import matmul, quant


class TransposeBatchmatmul(unittest.TestCase):
    def test_mla_v_absorb_layout(self):
        torch.manual_seed(0)
        out = torch.randn(5, 4, 32)  # (T, N, kv_lora_rank)
        w_uv = torch.randn(4, 32, 16)  # (N, kv_lora_rank, v_head_dim)
        y = matmul.npu_transpose_batchmatmul(out, w_uv, perm_x1=[1, 0, 2], perm_y=[1, 0, 2])
        want = torch.einsum("tnk,nkv->tnv", out.double(), w_uv.double())
        torch.testing.assert_close(y.double(), want, atol=1e-5, rtol=1e-5)
        y = matmul.npu_transpose_batchmatmul(out.transpose(0, 1).contiguous(), w_uv)
        torch.testing.assert_close(y.double(), want, atol=1e-5, rtol=1e-5)

    def test_int8_output_with_scale(self):
        torch.manual_seed(1)
        x, w = torch.randn(2, 3, 16), torch.randn(2, 16, 16)
        scale = torch.full((32,), 4.0)
        y = matmul.npu_transpose_batchmatmul(x, w, scale=quant.npu_trans_quant_param(scale))
        want = torch.einsum("bmk,bkn->mbn", x.double(), w.double()).reshape(3, 1, 32) * 4
        self.assertEqual((tuple(y.shape), y.dtype), ((3, 1, 32), torch.int8))
        self.assertLessEqual(float((y.double() - want.round().clamp(-128, 127)).abs().max()), 1.0)

    def test_constraints(self):
        with self.assertRaisesRegex(ValueError, "multiples of 16"):
            matmul.npu_transpose_batchmatmul(torch.randn(2, 3, 8), torch.randn(2, 8, 16))
        with self.assertRaisesRegex(ValueError, "perm_y"):
            matmul.npu_transpose_batchmatmul(torch.randn(2, 3, 16), torch.randn(2, 16, 16),
                                             perm_y=[0, 1, 2])
        with self.assertRaisesRegex(ValueError, "bias"):
            matmul.npu_transpose_batchmatmul(torch.randn(2, 3, 16), torch.randn(2, 16, 16),
                                             bias=torch.zeros(16))

    def test_format_cast_is_identity(self):
        t = torch.randn(4, 4)
        self.assertIs(matmul.npu_format_cast(t, 29), t)


if __name__ == "__main__":
    unittest.main()
