"""Installs the stand-in torch_npu into sys.modules when no real torch_npu exists.

A real torch_npu (anything importlib can find on sys.path, or an entry already in
sys.modules that is not the stand-in) always wins: install() then does nothing and
returns False.
"""
import importlib.util
import os
import sys

_STANDIN_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "torch_npu_standin"))
_STANDIN_INIT = os.path.join(_STANDIN_ROOT, "torch_npu", "__init__.py")


def _is_standin(module):
    return getattr(module, "IS_NPUFUSE_STANDIN", False)


def real_torch_npu_available():
    present = sys.modules.get("torch_npu")
    if present is not None:
        return not _is_standin(present)
    try:
        return importlib.util.find_spec("torch_npu") is not None
    except (ImportError, ValueError):
        return False


def install():
    """Returns True when the stand-in is (now) the torch_npu module, False if a real one exists."""
    if real_torch_npu_available():
        return False
    present = sys.modules.get("torch_npu")
    if present is not None and _is_standin(present):
        return True
    spec = importlib.util.spec_from_file_location(
        "torch_npu", _STANDIN_INIT, submodule_search_locations=[os.path.dirname(_STANDIN_INIT)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["torch_npu"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["torch_npu"]
        raise
    return True


def uninstall():
    """Removes the stand-in from sys.modules (a real torch_npu is left alone)."""
    present = sys.modules.get("torch_npu")
    if present is not None and _is_standin(present):
        del sys.modules["torch_npu"]
