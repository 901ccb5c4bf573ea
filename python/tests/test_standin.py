"""The stand-in torch_npu is used only when no real torch_npu can be imported."""
import importlib
import importlib.util
import os
import sys
import tempfile
import types
import unittest

import torch

import npufuse_ref
from npufuse_ref import standin


class StandIn(unittest.TestCase):
    def setUp(self):
        self.saved_module = sys.modules.pop("torch_npu", None)
        self.saved_path = list(sys.path)

    def tearDown(self):
        sys.modules.pop("torch_npu", None)
        if self.saved_module is not None:
            sys.modules["torch_npu"] = self.saved_module
        sys.path[:] = self.saved_path
        importlib.invalidate_caches()

    def test_installs_when_no_real_torch_npu_exists(self):
        if importlib.util.find_spec("torch_npu") is not None:
            self.skipTest("a real torch_npu is installed here")
        self.assertTrue(standin.install())
        import torch_npu
        y, _ = torch_npu.npu_rms_norm(torch.ones(2, 4), torch.ones(4))
        torch.testing.assert_close(y, torch.ones(2, 4), atol=1e-5, rtol=0)
        self.assertIs(torch_npu.npu_format_cast(y, torch_npu.Format.FRACTAL_NZ), y)
        self.assertEqual(int(torch_npu.Format.FRACTAL_NZ), 29)
        self.assertTrue(torch_npu.IS_NPUFUSE_STANDIN)
        self.assertTrue(standin.install())  # idempotent
        missing = [n for n, fn in npufuse_ref.OPS.items() if getattr(torch_npu, n, None) is not fn]
        self.assertEqual(missing, [])
        standin.uninstall()
        self.assertNotIn("torch_npu", sys.modules)

    def test_never_shadows_a_real_torch_npu_on_sys_path(self):
        with tempfile.TemporaryDirectory() as fake_site:
            os.makedirs(os.path.join(fake_site, "torch_npu"))
            with open(os.path.join(fake_site, "torch_npu", "__init__.py"), "w") as f:
                f.write("REAL_MARKER = 'device build'\n")
            sys.path.insert(0, fake_site)
            importlib.invalidate_caches()
            self.assertTrue(standin.real_torch_npu_available())
            self.assertFalse(standin.install())
            import torch_npu
            self.assertEqual(getattr(torch_npu, "REAL_MARKER", None), "device build")
            self.assertFalse(hasattr(torch_npu, "IS_NPUFUSE_STANDIN"))
            standin.uninstall()  # must leave the real module alone
            self.assertIs(sys.modules["torch_npu"], torch_npu)

    def test_already_imported_real_module_wins(self):
        real = types.ModuleType("torch_npu")
        sys.modules["torch_npu"] = real
        self.assertFalse(standin.install())
        self.assertIs(sys.modules["torch_npu"], real)
        self.assertFalse(hasattr(real, "npu_rms_norm"))


if __name__ == "__main__":
    unittest.main()
