"""Stand-in `torch_npu` for machines without an Ascend device.

It exposes the npufuse CPU reference operators under their torch_npu names
(torch_npu.npu_fused_infer_attention_score, ...) plus npu_format_cast as an
identity, so code written for torch_npu runs unchanged on CPU. It never touches
torch.npu. Install it with npufuse_ref.standin.install(), which refuses to
shadow a real torch_npu.
"""
import os
import sys

try:
    import npufuse_ref
except ImportError:  # the stand-in was put on sys.path without python/
    sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
    import npufuse_ref

IS_NPUFUSE_STANDIN = True
__version__ = "0.0+npufuse.cpu.reference"

globals().update(npufuse_ref.OPS)
__all__ = sorted(npufuse_ref.OPS)
