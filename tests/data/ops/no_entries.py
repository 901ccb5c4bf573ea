# A Python file without any _add_torch_npu_docstr call.
import torch


def helper(x):
    return x + 1
