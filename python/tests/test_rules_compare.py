"""The comparison behind every numeric check: tolerances and the float32 allowance."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

from npufuse_rules import compare_outputs, exact_outputs, in_replacement_layout, upcast_inputs  # noqa: E402


class CompareTest(unittest.TestCase):
    def setUp(self):
        g = torch.Generator().manual_seed(7)
        self.exact = torch.randn(64, 64, generator=g) * 3

    def test_a_candidate_within_tolerance_passes(self):
        ref = self.exact.to(torch.bfloat16)
        [c] = compare_outputs(ref, ref.clone())
        self.assertTrue(c.ok)

    def test_a_chain_rounding_worse_than_the_candidate_is_its_own_error(self):
        # The bf16 chain is off by 0.1 everywhere; the candidate is the exact value rounded.
        ref = (self.exact + 0.1).to(torch.bfloat16)
        cand = self.exact.to(torch.bfloat16)
        [without] = compare_outputs(ref, cand)
        self.assertFalse(without.ok)
        [with_exact] = compare_outputs(ref, cand, exact=self.exact)
        self.assertTrue(with_exact.ok, with_exact.describe())
        self.assertIn("float32 chain", with_exact.why)

    def test_a_wrong_candidate_still_fails_with_the_exact_values(self):
        ref = self.exact.to(torch.bfloat16)
        cand = (self.exact * 1.1).to(torch.bfloat16)
        [c] = compare_outputs(ref, cand, exact=self.exact)
        self.assertFalse(c.ok)

    def test_a_candidate_further_off_than_a_poor_chain_fails(self):
        ref = (self.exact + 0.1).to(torch.bfloat16)
        cand = (self.exact - 0.3).to(torch.bfloat16)
        [c] = compare_outputs(ref, cand, exact=self.exact)
        self.assertFalse(c.ok)

    def test_float32_outputs_never_use_the_allowance(self):
        ref = self.exact + 0.1
        [c] = compare_outputs(ref, self.exact.clone(), exact=self.exact)
        self.assertFalse(c.ok)

    def test_chosen_positions_equal_to_the_float32_choice_pass(self):
        # a top-k in bf16 swaps two near-equal scores; the fused choice is the float32 one
        exact = torch.tensor([[4, 1, 7, 2]])
        ref = torch.tensor([[4, 7, 1, 2]])
        [without] = compare_outputs(ref, exact.clone())
        self.assertFalse(without.ok)
        [with_exact] = compare_outputs(ref, exact.clone(), exact=exact)
        self.assertTrue(with_exact.ok, with_exact.describe())
        self.assertIn("float32 chain's choice", with_exact.why)
        [wrong] = compare_outputs(ref, torch.tensor([[4, 1, 7, 3]]), exact=exact)
        self.assertFalse(wrong.ok)

    def test_exact_outputs_run_the_chain_on_upcast_inputs(self):
        x = torch.randn(4, 8).to(torch.bfloat16)
        ids = torch.arange(4)
        up = upcast_inputs({"x": x, "ids": ids, "eps": 1e-6})
        self.assertEqual(up["x"].dtype, torch.float32)
        self.assertEqual(up["ids"].dtype, torch.int64)
        out = exact_outputs({}, lambda x, ids, eps: x[ids] * 2, {"x": x, "ids": ids, "eps": 1e-6})
        self.assertEqual(out.dtype, torch.float32)
        # float32 inputs: the chain already is its exact evaluation.
        self.assertIsNone(exact_outputs({}, lambda x, ids, eps: x[ids], {"x": x.float(), "ids": ids, "eps": 1e-6}))

    def test_absorbed_returns_fold_the_listed_value_with_w_uk(self):
        # q_pass [B, N, S, D]; kv_b_proj's weight [N * (D + V), C], its first D rows per head are W_UK
        g = torch.Generator().manual_seed(3)
        b, n, s, d, v, c = 2, 3, 1, 4, 5, 6
        q_pass = torch.randn(b, n, s, d, generator=g)
        w_kv_b = torch.randn(n * (d + v), c, generator=g)
        other = torch.randn(b, s, c, generator=g)
        rule = {"id": "demo", "absorbed_returns": {"0": {"weight": "w_kv_b", "head_axis": 1}}}
        folded, same = in_replacement_layout(rule, (q_pass, other), {"w_kv_b": w_kv_b})
        w_uk = w_kv_b.view(n, d + v, c)[:, :d]
        expected = torch.stack([q_pass[:, h] @ w_uk[h] for h in range(n)], dim=1)
        self.assertEqual(tuple(folded.shape), (b, n, s, c))
        self.assertTrue(torch.allclose(folded, expected, atol=1e-5))
        self.assertIs(same, other)
        # the heads on another axis ([B, S, N, D]) give the same numbers in that layout
        [bsnd] = in_replacement_layout({"absorbed_returns": {"0": {"weight": "w", "head_axis": 2}}},
                                       q_pass.transpose(1, 2), {"w": w_kv_b})
        self.assertTrue(torch.allclose(bsnd, expected.transpose(1, 2), atol=1e-5))
        with self.assertRaises(ValueError):
            in_replacement_layout(rule, (q_pass, other))


if __name__ == "__main__":
    unittest.main()
