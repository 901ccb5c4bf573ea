"""The harness's function cut on a model file that cannot be imported on its own (a
package's file with relative imports): the rule cut checks the fusion instead, and the
result says why, rather than failing the candidate."""
import os
import tempfile
import unittest

from npufuse_ref import standin
from npufuse_verify import harness

RULES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "rules")

PACKAGE_FILE = '''import torch
from torch import nn

from ...activations import ACT2FN


class Norm(nn.Module):
    def forward(self, hidden_states):
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        return self.weight * (hidden_states * torch.rsqrt(variance + self.eps))
'''


class FunctionCut(unittest.TestCase):
    def test_a_file_with_relative_imports_falls_back_to_the_rule_cut(self):
        standin.install()
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for name in ("modeling_original.py", "modeling_patched.py"):
                path = os.path.join(tmp, name)
                with open(path, "w") as f:
                    f.write(PACKAGE_FILE)
                paths.append(path)
            result = harness.run({
                "candidate": "norm.rms_norm@modeling_original.py:8", "rule": "norm.rms_norm",
                "rule_file": os.path.join(RULES, "norm", "rms_norm.py"), "dtype": "float32", "sizes": {},
                "tolerance": {"float32": {"atol": 1e-5, "rtol": 1e-4, "cosine": 0.99999}},
                "cut": {"original_module": paths[0], "patched_module": paths[1], "function": "Norm.forward",
                        "arguments": {"hidden_states": "hidden_states", "weight": "self.weight",
                                      "eps": "self.eps"}},
                "device": "cpu", "estimate": {"stages": []}})
        self.assertIsNone(result["error"], result.get("traceback"))
        self.assertTrue(result["passed"])
        self.assertTrue(result["cut"].startswith("rule "), result["cut"])
        self.assertIn("modeling_original.py cannot be imported on its own (ImportError", result["cut_note"])


if __name__ == "__main__":
    unittest.main()
