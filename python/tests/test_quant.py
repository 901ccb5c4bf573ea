"""Quantisation ops: the doc examples of npu_dynamic_quant and direct formulations."""
import struct
import unittest

import torch

from npufuse_ref import quant
from npufuse_ref._common import unpack_int32_to_int4


class DynamicQuant(unittest.TestCase):
    def test_doc_example_plain(self):
        x = torch.tensor([[0.7261, 0.3726, 0.9126], [0.9023, 0.9990, 0.1279],
                          [0.8628, 0.6240, 0.9028]], dtype=torch.float16)
        y, scale = quant.npu_dynamic_quant(x)
        self.assertEqual(y.tolist(), [[101, 52, 127], [115, 127, 16], [121, 88, 127]])
        self.assertEqual(y.dtype, torch.int8)
        torch.testing.assert_close(scale, torch.tensor([0.0072, 0.0079, 0.0071]), atol=5e-5, rtol=0)

    def test_doc_example_smooth_scales(self):
        x = torch.tensor([[0.6680, 0.9492, 0.0845], [0.1924, 0.5278, 0.1484],
                          [0.6631, 0.9497, 0.0957]], dtype=torch.float16)
        smooth = torch.tensor([0.8042, 0.0884, 0.8901], dtype=torch.float16)
        y, scale = quant.npu_dynamic_quant(x, smooth_scales=smooth)
        self.assertEqual(y.tolist(), [[127, 20, 18], [127, 38, 108], [127, 20, 20]])
        torch.testing.assert_close(scale, torch.tensor([0.0042, 0.0012, 0.0042]), atol=5e-5, rtol=0)

    def test_group_index_picks_smooth_rows(self):
        torch.manual_seed(0)
        x = torch.randn(5, 16).half()
        smooth = torch.rand(2, 16).half() + 0.5
        y, scale = quant.npu_dynamic_quant(x, smooth_scales=smooth,
                                           group_index=torch.tensor([2, 5], dtype=torch.int32))
        v = torch.cat([x[:2].double() * smooth[0].double(), x[2:].double() * smooth[1].double()])
        torch.testing.assert_close(scale.double(), v.abs().amax(-1) / 127, atol=1e-6, rtol=1e-5)
        self.assertEqual(y.tolist(), (v / (v.abs().amax(-1, keepdim=True) / 127)).round().to(torch.int8).tolist())

    def test_group_index_constraints(self):
        x = torch.randn(4, 8).half()
        s = torch.rand(2, 8).half()
        with self.assertRaisesRegex(ValueError, "last group_index"):
            quant.npu_dynamic_quant(x, smooth_scales=s, group_index=torch.tensor([1, 3]))
        with self.assertRaisesRegex(ValueError, "increasing"):
            quant.npu_dynamic_quant(x, smooth_scales=s, group_index=torch.tensor([3, 1]))
        with self.assertRaisesRegex(ValueError, "more than one"):
            quant.npu_dynamic_quant(torch.randn(8).half())

    def test_int4_output_packs_eight_per_int32(self):
        torch.manual_seed(1)
        x = torch.randn(3, 16).half()
        y, scale = quant.npu_dynamic_quant(x, dst_type=torch.quint4x2)
        self.assertEqual((tuple(y.shape), y.dtype), ((3, 2), torch.int32))
        vals = unpack_int32_to_int4(y).double()
        want = (x.double() / (x.double().abs().amax(-1, keepdim=True) / 7)).round()
        self.assertEqual(vals.tolist(), want.tolist())
        torch.testing.assert_close(scale.double(), x.double().abs().amax(-1) / 7, atol=1e-6, rtol=1e-5)


def float_bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


class TransQuantParam(unittest.TestCase):
    def test_bit_layout(self):
        out = quant.npu_trans_quant_param(torch.tensor([1.0, 0.1]))
        self.assertEqual(out.dtype, torch.int64)
        self.assertEqual(int(out[0]), 0x3F800000 | (1 << 46))
        self.assertEqual(int(out[1]), (float_bits(0.1) & 0xFFFFE000) | (1 << 46))
        with_offset = quant.npu_trans_quant_param(torch.tensor([1.0]), torch.tensor([-3.0]))
        self.assertEqual((int(with_offset[0]) >> 37) & 0x1FF, (-3) & 0x1FF)
        decoded = quant.decode_quant_param(out)
        self.assertLess(abs(float(decoded[1]) - 0.1), 0.1 * 2 ** -9)


class QuantMatmul(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(2)
        self.a = torch.randint(-20, 20, (4, 32), dtype=torch.int8)
        self.b = torch.randint(-20, 20, (32, 8), dtype=torch.int8)
        self.acc = self.a.double() @ self.b.double()

    def test_per_channel_int8_output_with_int32_bias(self):
        scale = torch.rand(8) * 0.01
        bias = torch.randint(-100, 100, (8,), dtype=torch.int32)
        y = quant.npu_quant_matmul(self.a, self.b, scale, bias=bias)
        want = ((self.acc + bias.double()) * scale.double()).round().clamp(-128, 127)
        self.assertEqual(y.dtype, torch.int8)
        self.assertLessEqual(float((y.double() - want).abs().max()), 1.0)

    def test_pertoken_bf16_output(self):
        scale, pts = torch.rand(8), torch.rand(4)
        y = quant.npu_quant_matmul(self.a, self.b, scale, pertoken_scale=pts,
                                   output_dtype=torch.bfloat16)
        want = self.acc * scale.double() * pts.double().unsqueeze(-1)
        torch.testing.assert_close(y.double(), want, atol=0.5, rtol=1e-2)
        with self.assertRaisesRegex(ValueError, "output_dtype"):
            quant.npu_quant_matmul(self.a, self.b, scale, pertoken_scale=pts)

    def test_trans_quant_param_scale_and_fp16_output(self):
        scale = torch.rand(8) * 0.01
        packed = quant.npu_trans_quant_param(scale)
        y = quant.npu_quant_matmul(self.a, self.b, packed, output_dtype=torch.float16)
        torch.testing.assert_close(y.double(), self.acc * scale.double(), atol=1e-2, rtol=3e-3)


class WeightQuantBatchmatmul(unittest.TestCase):
    def test_per_channel_and_per_group(self):
        torch.manual_seed(3)
        x = torch.randn(3, 64)
        w = torch.randint(-8, 8, (64, 16), dtype=torch.int8)
        s, o = torch.rand(16), torch.randn(16)
        y = quant.npu_weight_quant_batchmatmul(x, w, s, o)
        torch.testing.assert_close(y.double(), x.double() @ ((w.double() + o.double()) * s.double()),
                                   atol=1e-4, rtol=1e-4)
        gs, go = torch.rand(2, 16), torch.randn(2, 16)
        y = quant.npu_weight_quant_batchmatmul(x, w, gs, go, antiquant_group_size=32)
        deq = (w.double() + go.double().repeat_interleave(32, 0)) * gs.double().repeat_interleave(32, 0)
        torch.testing.assert_close(y.double(), x.double() @ deq, atol=1e-4, rtol=1e-4)


if __name__ == "__main__":
    unittest.main()
