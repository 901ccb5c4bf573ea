"""Examples with numbers from the operator docs (op-plugin 26.1.0), replayed on the reference.

Inputs and outputs are the printed values (inputs rounded to the digits shown); the
examples of npu_dynamic_quant, fast_gelu, npu_moe_init_routing and scatter_update_ live
with their family's tests.
"""
import unittest

import torch

from npufuse_ref import moe, quant


class DocExamples(unittest.TestCase):
    def test_npu_anti_quant(self):
        out = quant.npu_anti_quant(torch.tensor([1, 2, 3, 4], dtype=torch.int8), torch.tensor([2.0]),
                                   offset=torch.tensor([2.0]), dst_dtype=torch.float16)
        self.assertEqual(out.dtype, torch.float16)
        self.assertEqual(out.tolist(), [6.0, 8.0, 10.0, 12.0])

    def test_npu_quantize_multiplying_scale(self):
        x = torch.tensor([[[-7.7834e-01, -1.0473e+00, -1.1155e+00, 1.2233e+00, -1.2271e+00,
                            -2.5612e+00, -1.8274e-01, 2.8293e+00, 1.9029e-01, -1.9333e+00,
                            -4.9270e-01, -1.0650e+00],
                           [-8.9416e-01, 3.1869e-02, -5.8144e-01, -4.9477e-01, 9.7323e-02,
                            -3.8681e-01, 2.1969e-03, -6.3244e-01, 7.1591e-01, -1.8587e-01,
                            -1.3381e+00, -2.6253e-01],
                           [1.8462e-02, 1.2397e-01, -9.0656e-01, -9.9280e-01, -4.4235e-02,
                            1.0623e+00, -9.8437e-02, 1.2941e+00, 1.0805e+00, -1.7269e-01,
                            -9.9205e-02, -6.1429e-01]],
                          [[1.3678e+00, -2.7348e-01, -4.1354e-01, -9.4638e-01, 4.2792e-01,
                            8.0462e-01, 9.3584e-01, 6.3704e-01, 1.1269e+00, -1.5329e+00,
                            5.8572e-01, -1.3966e+00],
                           [3.5882e-01, 8.7029e-01, -1.3176e+00, 1.1601e+00, -3.6984e-01,
                            7.3642e-01, -1.0755e+00, 6.6557e-01, 3.1149e+00, -6.8776e-01,
                            -1.0913e+00, 4.4962e-01],
                           [-1.2505e+00, 1.5474e+00, -7.4332e-02, -1.6657e+00, 1.3275e+00,
                            5.8914e-02, 8.4287e-01, -1.7109e+00, 1.8256e-01, 3.2937e-01,
                            2.4875e+00, 1.3921e+00]]])
        out = quant.npu_quantize(x, torch.tensor([3.0] * 12), None, torch.qint8, -1, False)
        self.assertEqual(out.tolist(), [
            [[-2, -3, -3, 4, -4, -8, -1, 8, 1, -6, -1, -3],
             [-3, 0, -2, -1, 0, -1, 0, -2, 2, -1, -4, -1],
             [0, 0, -3, -3, 0, 3, 0, 4, 3, -1, 0, -2]],
            [[4, -1, -1, -3, 1, 2, 3, 2, 3, -5, 2, -4],
             [1, 3, -4, 3, -1, 2, -3, 2, 9, -2, -3, 1],
             [-4, 5, 0, -5, 4, 0, 3, -5, 1, 1, 7, 4]]])

    def test_npu_quantize_small_bf16_values_round_to_zero(self):
        x = torch.tensor([[[0.9609, 1.3281, -0.6172, 0.5469, -1.1797, -1.1719, -0.7422, 0.9727,
                            -0.9062, -0.0815, -0.8047, 1.0703]]]).bfloat16()
        out = quant.npu_quantize(x, torch.tensor([0.1] * 12).bfloat16(), None, torch.qint8, -1, False)
        self.assertEqual(out.tolist(), [[[0] * 12]])

    def test_npu_group_quant(self):
        x = torch.tensor([[1.0029, -1.2373, 1.0107, -0.2681],
                          [0.5791, 0.1101, 1.0059, -0.9658],
                          [-1.7637, 1.7588, -1.3193, 0.3989],
                          [1.3262, 0.4854, 1.9551, 0.9697],
                          [-0.8770, -1.8828, 2.1777, -0.0050],
                          [0.4722, 0.5605, 0.8267, -0.9810]]).half()
        scale = torch.tensor([[-0.2710, -0.9381, 0.2850, -1.1230],
                              [0.5217, -0.7233, -0.1730, -0.1245],
                              [-1.5433, -0.9129, -2.2095, 1.7371],
                              [-0.8253, 0.3973, 0.1430, 0.3885]])
        y = quant.npu_group_quant(x, scale, torch.tensor([1, 4, 6, 6], dtype=torch.int32),
                                  offset=torch.tensor([-1.1658]), dst_dtype=torch.int8)
        want = torch.tensor([[-1, 0, -1, -1], [-1, -1, -1, -1], [-2, -2, -1, -1],
                             [0, -2, -2, -1], [0, 1, -6, -1], [-2, -2, -3, -3]])
        self.assertEqual(y.tolist(), want.tolist())

    def test_npu_moe_compute_expert_tokens(self):
        out = moe.npu_moe_compute_expert_tokens(torch.tensor([0, 0, 0, 1, 1, 2], dtype=torch.int32), 3)
        self.assertEqual(out.tolist(), [3, 5, 6])


if __name__ == "__main__":
    unittest.main()
