"""Which torch_npu the harness runs: a real one on an NPU, or the CPU stand-in.

`--device npu` insists on the real device, `cpu` always uses the stand-in (even where a
real torch_npu exists, so results are reproducible on any machine), `auto` takes the NPU
when one is there.
"""
import os
import sys

_PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _ensure_path():
    if _PYTHON_DIR not in sys.path:
        sys.path.insert(0, _PYTHON_DIR)


def npu_available():
    """True only when a real torch_npu imports and reports a device."""
    _ensure_path()
    from npufuse_ref import standin
    if not standin.real_torch_npu_available():
        return False
    try:
        import torch
        import torch_npu  # noqa: F401  (registers torch.npu)
        return bool(torch.npu.is_available())
    except Exception:  # a broken CANN install is no NPU
        return False


def select(device):
    """('npu'|'cpu', words for the report). Raises RuntimeError when 'npu' is asked for and absent."""
    _ensure_path()
    if device in ("npu", "auto") and npu_available():
        return "npu", "NPU with the real torch_npu"
    if device == "npu":
        raise RuntimeError("--device npu: no real torch_npu with an NPU on this machine")
    from npufuse_ref import standin
    if standin.real_torch_npu_available():
        # The CPU run needs the reference operators, not the real module.
        sys.modules.pop("torch_npu", None)
        import importlib.util
        spec = importlib.util.spec_from_file_location(
            "torch_npu", os.path.join(_PYTHON_DIR, "torch_npu_standin", "torch_npu", "__init__.py"),
            submodule_search_locations=[os.path.join(_PYTHON_DIR, "torch_npu_standin", "torch_npu")])
        module = importlib.util.module_from_spec(spec)
        sys.modules["torch_npu"] = module
        spec.loader.exec_module(module)
    else:
        standin.install()
    # The test aid: operators made wrong on purpose (wrong_operator.py), CPU only.
    from npufuse_verify.wrong_operator import spoil_from_environment
    spoiled = spoil_from_environment(sys.modules["torch_npu"])
    if spoiled:
        return "cpu", f"CPU with the npufuse_ref stand-in torch_npu, {', '.join(spoiled)} made wrong on purpose"
    return "cpu", "CPU with the npufuse_ref stand-in torch_npu"
