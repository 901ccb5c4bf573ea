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

import enum

IS_NPUFUSE_STANDIN = True
__version__ = "0.0+npufuse.cpu.reference"


class Format(enum.IntEnum):
    """ACL storage formats accepted by npu_format_cast (ignored on CPU)."""
    UNDEFINED = -1
    NCHW = 0
    NHWC = 1
    ND = 2
    NC1HWC0 = 3
    FRACTAL_Z = 4
    NC1HWC0_C04 = 12
    HWCN = 16
    NDHWC = 27
    FRACTAL_NZ = 29
    NCDHW = 30
    NDC1HWC0 = 32
    FRACTAL_Z_3D = 33
    NC = 35
    NCL = 47

globals().update(npufuse_ref.OPS)
__all__ = sorted(npufuse_ref.OPS) + ["Format"]
