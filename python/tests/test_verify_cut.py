"""The harness's function cut on a model file that cannot be imported on its own (a
package's file with relative imports, HF style): it is loaded with stand-ins for those
imports and the function cut runs; a function that computes with a stand-in falls back
to the rule cut, and the result says why, rather than failing the candidate."""
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


# HF's decorators, base classes and annotations from the package, and a name from a
# module this machine lacks, used at run time.
STYLED_FILE = '''from typing import Optional

import torch
from torch import nn

from ...integrations import use_kernel_forward_from_hub
from ...modeling_layers import GradientCheckpointingLayer
from ...utils import auto_docstring, logging
from ...utils.deprecation import deprecate_kwarg
from no_such_package_here import SCALE

logger = logging.get_logger(__name__)


@use_kernel_forward_from_hub("RMSNorm")
class Norm(nn.Module):
    @deprecate_kwarg("eps", version="9.9")
    def forward(self, hidden_states: torch.Tensor, cache: Optional[GradientCheckpointingLayer] = None):
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        return self.weight * (hidden_states * torch.rsqrt(variance + self.eps))


@auto_docstring
class Layer(GradientCheckpointingLayer):
    def forward(self, hidden_states):
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        return self.weight * (hidden_states * torch.rsqrt(variance + self.eps)) * SCALE
'''


class FunctionCut(unittest.TestCase):
    def run_cut(self, text, function, patched_text=None):
        standin.install()
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for name, body in (("modeling_original.py", text), ("modeling_patched.py", patched_text or text)):
                path = os.path.join(tmp, name)
                with open(path, "w") as f:
                    f.write(body)
                paths.append(path)
            return harness.run({
                "candidate": "norm.rms_norm@modeling_original.py:8", "rule": "norm.rms_norm",
                "rule_file": os.path.join(RULES, "norm", "rms_norm.py"), "dtype": "float32", "sizes": {},
                "tolerance": {"float32": {"atol": 1e-5, "rtol": 1e-4, "cosine": 0.99999}},
                "cut": {"original_module": paths[0], "patched_module": paths[1], "function": function,
                        "arguments": {"hidden_states": "hidden_states", "weight": "self.weight",
                                      "eps": "self.eps"}},
                "device": "cpu", "estimate": {"stages": []}})

    def test_a_file_with_relative_imports_runs_the_function_cut_with_stand_ins(self):
        result = self.run_cut(PACKAGE_FILE, "Norm.forward")
        self.assertIsNone(result["error"], result.get("traceback"))
        self.assertTrue(result["passed"])
        self.assertEqual(result["cut"], "function Norm.forward (original file vs patched file)")
        self.assertIn("modeling_original.py cannot be imported on its own (ImportError", result["cut_note"])
        self.assertIn("loaded with stand-ins for the imports this machine cannot resolve (...activations)",
                      result["cut_note"])

    def test_decorators_base_classes_and_annotations_from_the_package_load(self):
        result = self.run_cut(STYLED_FILE, "Norm.forward")
        self.assertIsNone(result["error"], result.get("traceback"))
        self.assertTrue(result["passed"])
        self.assertTrue(result["cut"].startswith("function Norm.forward"), result["cut"])
        self.assertIn("...integrations", result["cut_note"])
        self.assertIn("no_such_package_here", result["cut_note"])

    def test_a_function_computing_with_a_stand_in_falls_back_to_the_rule_cut(self):
        result = self.run_cut(STYLED_FILE, "Layer.forward")
        self.assertIsNone(result["error"], result.get("traceback"))
        self.assertTrue(result["passed"])
        self.assertTrue(result["cut"].startswith("rule "), result["cut"])
        self.assertIn("function cut not used: Layer.forward computes with a stand-in for an import", result["cut_note"])

    def test_an_original_that_fails_here_falls_back_to_the_rule_cut(self):
        # The original calls what this torch lacks: no fault of the patch.
        broken = PACKAGE_FILE.replace("variance = hidden_states.pow(2).mean(-1, keepdim=True)",
                                      "variance = torch.no_such_function(hidden_states)")
        result = self.run_cut(broken, "Norm.forward")
        self.assertIsNone(result["error"], result.get("traceback"))
        self.assertTrue(result["cut"].startswith("rule "), result["cut"])
        self.assertIn("function cut not used: Norm.forward fails on this machine in the original file too",
                      result["cut_note"])

    def test_a_patched_side_that_fails_is_the_result(self):
        broken = PACKAGE_FILE.replace("variance = hidden_states.pow(2).mean(-1, keepdim=True)",
                                      "variance = torch.no_such_function(hidden_states)")
        result = self.run_cut(PACKAGE_FILE, "Norm.forward", patched_text=broken)
        self.assertFalse(result["passed"])
        self.assertIn("no_such_function", result["error"])

    def test_the_stand_ins_are_not_left_in_the_real_import_machinery(self):
        import builtins
        before = builtins.__import__
        self.run_cut(PACKAGE_FILE, "Norm.forward")
        self.assertIs(builtins.__import__, before)


if __name__ == "__main__":
    unittest.main()
