"""Activations and FFN ops against direct formulas; fast_gelu doc example."""
import math
import unittest

import torch

from npufuse_ref import ffn
from tests import direct


class Swiglu(unittest.TestCase):
    def test_first_half_goes_through_silu(self):
        torch.manual_seed(0)
        x = torch.randn(3, 4, 10)
        torch.testing.assert_close(ffn.npu_swiglu(x).double(),
                                   direct.silu(x[..., :5].double()) * x[..., 5:].double())
        torch.testing.assert_close(ffn.npu_swiglu(x, dim=1).double(),
                                   direct.silu(x[:, :2].double()) * x[:, 2:].double())
        with self.assertRaisesRegex(ValueError, "even"):
            ffn.npu_swiglu(torch.randn(2, 5))

    def test_swiglu_quant_dynamic_groups(self):
        torch.manual_seed(1)
        x = torch.randn(6, 16)
        smooth = torch.rand(3, 8) + 0.5
        for list_type, index in ((0, [2, 4, 6]), (1, [2, 2, 2])):
            y, scale = ffn.npu_swiglu_quant(x, smooth_scales=smooth, group_index=torch.tensor(index),
                                            activate_left=True, quant_mode=1,
                                            group_list_type=list_type)
            act = direct.silu(x[:, :8].double()) * x[:, 8:].double()
            act = act * smooth.double().repeat_interleave(2, 0)
            torch.testing.assert_close(scale.double(), act.abs().amax(-1) / 127, atol=1e-6, rtol=1e-5)
            want = (act / (act.abs().amax(-1, keepdim=True) / 127)).round()
            self.assertLessEqual(float((y.double() - want).abs().max()), 1.0)

    def test_swiglu_quant_right_activation_static(self):
        torch.manual_seed(2)
        x = torch.randn(4, 8)
        s, o = torch.full((1, 4), 30.0), torch.full((1, 4), 2.0)
        y, _ = ffn.npu_swiglu_quant(x, smooth_scales=s, offsets=o)
        act = x[:, :4].double() * direct.silu(x[:, 4:].double())
        self.assertEqual(y.tolist(), (act * 30 + 2).round().clamp(-128, 127).to(torch.int8).tolist())

    def test_dequant_swiglu_quant_modes(self):
        torch.manual_seed(3)
        x = torch.randint(-500, 500, (4, 16), dtype=torch.int32)
        ws, acts = torch.rand(1, 16) * 0.01, torch.rand(4, 1)
        deq = x.double() * ws.double() * acts.double()
        y, scale = ffn.npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=acts,
                                                activate_left=True, quant_mode=1)
        act = direct.silu(deq[:, :8]) * deq[:, 8:]
        torch.testing.assert_close(scale.double(), act.abs().amax(-1) / 127, atol=1e-6, rtol=1e-5)
        y1, scale1 = ffn.npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=acts,
                                                  quant_mode=1, swiglu_mode=1, clamp_limit=0.5)
        glu, lin = deq[:, 0::2].clamp(max=0.5), deq[:, 1::2].clamp(-0.5, 0.5)
        act1 = glu * torch.sigmoid(1.702 * glu) * (lin + 1.0)
        torch.testing.assert_close(scale1.double(), act1.abs().amax(-1) / 127, atol=1e-6, rtol=1e-5)

    def test_clipped_swiglu_gpt_oss(self):
        torch.manual_seed(4)
        x = torch.randn(3, 12) * 6
        y = ffn.npu_clipped_swiglu(x)
        glu, lin = x[:, 0::2].double().clamp(max=7.0), x[:, 1::2].double().clamp(-7.0, 7.0)
        torch.testing.assert_close(y.double(), glu * torch.sigmoid(1.702 * glu) * (lin + 1.0),
                                   atol=1e-5, rtol=1e-5)
        y = ffn.npu_clipped_swiglu(x, interleaved=False, group_index=torch.tensor([2]))
        glu, lin = x[:2, :6].double().clamp(max=7.0), x[:2, 6:].double().clamp(-7.0, 7.0)
        torch.testing.assert_close(y[:2].double(), glu * torch.sigmoid(1.702 * glu) * (lin + 1.0),
                                   atol=1e-5, rtol=1e-5)
        self.assertEqual(float(y[2].abs().sum()), 0.0)


class Gelu(unittest.TestCase):
    def test_fast_gelu_doc_example(self):
        out = ffn.fast_gelu(torch.tensor([0.5991, 0.4094]))
        torch.testing.assert_close(out, torch.tensor([0.4403, 0.2733]), atol=5e-5, rtol=0)

    def test_gelu_forms(self):
        x = torch.linspace(-4, 4, 41, dtype=torch.float64)
        erf = 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))
        tanh = 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
        torch.testing.assert_close(ffn.npu_gelu(x.float()).double(), erf, atol=1e-6, rtol=1e-6)
        torch.testing.assert_close(ffn.npu_gelu(x.float(), approximate="tanh").double(), tanh,
                                   atol=1e-6, rtol=1e-6)
        y = ffn.npu_gelu_mul(torch.stack([x, x], -1).reshape(1, -1).float())
        self.assertEqual(tuple(y.shape), (1, 41))


class Ffn(unittest.TestCase):
    def test_swiglu_ffn(self):
        torch.manual_seed(5)
        x, w1, w2 = torch.randn(3, 16), torch.randn(16, 24) * 0.3, torch.randn(12, 16) * 0.3
        y = ffn.npu_ffn(x, w1, w2, "swiglu")
        h = x.double() @ w1.double()
        want = (direct.silu(h[:, :12]) * h[:, 12:]) @ w2.double()
        torch.testing.assert_close(y.double(), want, atol=1e-5, rtol=1e-5)

    def test_relu_ffn_with_experts(self):
        torch.manual_seed(6)
        x = torch.randn(5, 8)
        w1, w2 = torch.randn(2, 8, 6), torch.randn(2, 6, 8)
        b1 = torch.randn(2, 6)
        y = ffn.npu_ffn(x, w1, w2, "relu", expert_tokens=[2, 3], bias1=b1)
        want = torch.cat([torch.relu(x[:2].double() @ w1[0].double() + b1[0].double()) @ w2[0].double(),
                          torch.relu(x[2:].double() @ w1[1].double() + b1[1].double()) @ w2[1].double()])
        torch.testing.assert_close(y.double(), want, atol=1e-5, rtol=1e-5)
        with self.assertRaisesRegex(ValueError, "expert_tokens"):
            ffn.npu_ffn(x, w1, w2, "swiglu", expert_tokens=[2, 3])


if __name__ == "__main__":
    unittest.main()
