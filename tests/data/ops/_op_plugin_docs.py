# Operator docstrings in the layout torch_npu ships (torch_npu/_op_plugin_docs.py).
# Written for the npufuse tests: both docstring styles, escapes, quotes of the
# other kind inside triple-quoted text, implicit concatenation, a docstring-only
# operator, and one malformed call that the reader must report and skip.
import torch

import torch_npu


def _add_torch_npu_docstr(method, docstr):
    """Attach a docstring to a torch_npu function if this build exposes it."""
    func = getattr(torch_npu, method, None)
    if not func:
        return
    func.__doc__ = docstr


_add_torch_npu_docstr(
    "npu_rms_norm",
    """
torch_npu.npu_rms_norm(Tensor self, Tensor gamma, float epsilon=1e-06) -> (Tensor, Tensor)
功能描述
对输入做RMS归一化，返回结果与rstd。

参数说明
self (Tensor)：输入，2到8维。
gamma (Tensor)：缩放权重。
epsilon (float)：默认值1e-06。

示例
>>> y, rstd = torch_npu.npu_rms_norm(x, gamma)
""",
)


_add_torch_npu_docstr(
    "npu_swiglu",
    """
功能描述:
SwiGLU激活：沿dim切成两半a与b，输出silu(a) * b。

接口原型:
torch_npu.npu_swiglu(Tensor self,
                     int dim=-2,
                     *, bool approximate=False) -> Tensor

参数说明:
self：输入张量。
dim：切分的维度。

支持的型号:
Atlas A2 训练系列产品
""",
)


_add_torch_npu_docstr("npu_rotary_mul", '''
功能描述:
\u65cb\u8f6c位置编码（RoPE）：x * r1 + rotate(x) * r2。\tTab and "double quotes" and """triple""" inside.
A backslash: \\ and a continued \
line.

接口原型:
```python
torch_npu.npu_rotary_mul(Tensor self, Tensor r1, Tensor r2, str rotary_mode='half') -> Tensor
```
''')

# A docstring-only operator (the catalog has no entry): raw string, older style.
_add_torch_npu_docstr("npu_fast_gelu", r"""torch_npu.npu_fast_gelu(Tensor self) -> Tensor
Fast GELU approximation; \d and \n stay as written in a raw string.
""")

# Malformed: the docstring argument is missing.
_add_torch_npu_docstr("npu_broken")

_add_torch_npu_docstr("npu_apply_rotary_pos_emb",
                      "torch_npu.npu_apply_rotary_pos_emb(Tensor query, Tensor key, Tensor cos, Tensor sin, "
                      "str layout='BSND') -> (Tensor, Tensor)\n"
                      "原地对query与key施加旋转位置编码。\n")
