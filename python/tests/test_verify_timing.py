"""The harness's measured performance path (real NPU only), run here with the
device calls replaced: warm-up and repeat counts, a synchronisation after each
timed call, median and spread, and the result's shape."""
import os
import sys
import unittest

import torch

from npufuse_ref import standin
from npufuse_verify import harness

RULES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "rules")


class FakeNpu:
    """torch.npu as far as the timing uses it: synchronize() is counted."""

    def __init__(self):
        self.synchronized = 0

    def synchronize(self):
        self.synchronized += 1


class Timing(unittest.TestCase):
    def setUp(self):
        self.had_npu = hasattr(torch, "npu")
        self.saved_npu = getattr(torch, "npu", None)
        self.fake = FakeNpu()
        torch.npu = self.fake
        self.saved_module = sys.modules.get("torch_npu")

    def tearDown(self):
        sys.modules.pop("torch_npu", None)
        if self.saved_module is not None:
            sys.modules["torch_npu"] = self.saved_module
        if self.had_npu:
            torch.npu = self.saved_npu
        else:
            del torch.npu

    def test_warm_up_then_each_timed_call_is_synchronised(self):
        calls = []
        result = harness.timed(lambda where: calls.append(where), "npu", warmup=3, repeats=7)
        self.assertEqual(len(calls), 10)
        self.assertEqual(set(calls), {"npu"})
        self.assertEqual(self.fake.synchronized, 1 + 7)  # once after the warm-up, once per timed call
        self.assertEqual((result["repeats"], result["warmup"]), (7, 3))
        self.assertLessEqual(result["min_us"], result["median_us"])
        self.assertLessEqual(result["median_us"], result["max_us"])

    def test_a_run_on_the_device_reports_both_sides_measured(self):
        standin.install()
        saved = (harness.device_choice.select, harness._moved)
        harness.device_choice.select = lambda device: ("npu", "NPU (replaced for the test)")
        harness._moved = lambda value, where: value
        try:
            result = harness.run({
                "candidate": "norm.rms_norm@m.py:1", "rule": "norm.rms_norm",
                "rule_file": os.path.join(RULES, "norm", "rms_norm.py"), "dtype": "float32", "sizes": {},
                "tolerance": {"float32": {"atol": 1e-5, "rtol": 1e-4, "cosine": 0.99999}}, "cut": None,
                "device": "npu", "timing": {"warmup": 2, "repeats": 5},
                "estimate": {"stages": []}})
        finally:
            harness.device_choice.select, harness._moved = saved
        self.assertIsNone(result["error"], result.get("traceback"))
        self.assertTrue(result["passed"])
        perf = result["performance"]
        self.assertEqual(perf["kind"], "measured")
        for side in ("original", "replacement"):
            self.assertEqual((perf[side]["repeats"], perf[side]["warmup"]), (5, 2))
        self.assertAlmostEqual(perf["speedup"], perf["original"]["median_us"] / perf["replacement"]["median_us"])
        self.assertEqual(self.fake.synchronized, 2 * (1 + 5))


if __name__ == "__main__":
    unittest.main()
