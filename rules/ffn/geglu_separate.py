"""GeGLU on separate gate and up projections (`gelu(gate_proj(x)) * up_proj(x)`) becomes, after merging the projections, `npu_gelu_mul`.

What it does
    Finds the tanh-GELU gated unit of Gemma-style MLPs whose gate and up projections
    are two linears: `F.gelu(gate_proj(x), approximate="tanh") * up_proj(x)`. It
    proposes one `torch_npu.npu_gelu_mul(gate_up, approximate="tanh")` on the output
    of a merged projection, gate first, then up.
Why
    Eager GeGLU writes the GELU output and reads it back for the product: two
    element-wise kernels over the widest activation of the layer. The fused kernel
    does both in one pass; the merged projection is one matmul instead of two.
Example
    gate = F.gelu(self.gate_proj(x), approximate="tanh")
    hidden = gate * self.up_proj(x)
Use instead
    # self.gate_up_proj: the gate weight rows stacked before the up rows (biases too)
    hidden = torch_npu.npu_gelu_mul(self.gate_up_proj(x), approximate="tanh")
Fix safety
    Needs prerequisites: the two projections are merged into one (weights and biases
    stacked, gate first) when the checkpoint is loaded. The operator's limits then
    decide: the last axis (gate and up together) at most 1024 and 32-byte aligned,
    at most 200000 rows. LLM widths are usually far larger, so the candidate is then
    reported as not applicable with the constraint that fails. An erf GELU
    (`approximate="none"`) is another mapping and does not match here.
References
    catalog/ffn/npu_gelu_mul.toml; rules/ffn/geglu.py (the merged form).
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "ffn.geglu_separate",
    "title": "gelu(gate_proj(x)) * up_proj(x) on separate projections -> merge + npu_gelu_mul (last axis <= 1024)",
    "module": "ffn",
    "apis": ["npu_gelu_mul"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "merge_gate_up",
         "en": "Merge gate_proj and up_proj into one gate_up projection (weights and biases stacked, gate first) at load time.",
         "zh": "加载时把gate_proj与up_proj合并为一个gate_up投影（权重和偏置堆叠，gate在前）。",
         "mechanical": False},
    ],
    "checks": ["npu_gelu_mul:*"],
    "facts": {"activation": "gelu_tanh", "ffn_gated": True, "glu_order": "separate", "glu_clamped": False},
    "inputs": {
        "gate": {"shape": ["T", "I"], "dtype": "act"},
        "up": {"shape": ["T", "I"], "dtype": "act"},
    },
    "sizes": {"T": 6, "I": 256},
    "dtypes": ["float32", "bfloat16"],
    "match": {"only_from": {"gate": ["linear"], "up": ["linear"]},
              "explain": [{"when": "lacks argument approximate", "near_miss": "fixtures/geglu_separate_nomatch_erf_gelu.py"}]},
    "near_misses": [
        {"file": "fixtures/geglu_separate_nomatch_erf_gelu.py",
         "reason": "the GELU is the exact (erf) form: npu_gelu_mul's tanh mode would change the numbers"},
    ],
    "doc_zh": """门控与上投影分开的GeGLU（gelu(gate_proj(x)) * up_proj(x)），在合并投影后替换为npu_gelu_mul。

功能
    识别Gemma写法MLP中tanh-GELU门控单元，其gate与up投影是两个linear：
    F.gelu(gate_proj(x), approximate="tanh") * up_proj(x)。建议在合并后的投影输出（gate在前，
    up在后）上调用一次torch_npu.npu_gelu_mul(gate_up, approximate="tanh")。
原因
    eager GeGLU写出GELU结果再读回做乘法：在层内最宽的激活上执行两个逐元素内核。融合内核一次
    完成；合并后的投影也只需一次矩阵乘而不是两次。
示例
    gate = F.gelu(self.gate_proj(x), approximate="tanh")
    hidden = gate * self.up_proj(x)
替代写法
    # self.gate_up_proj：gate权重行堆叠在up之前（偏置亦然）
    hidden = torch_npu.npu_gelu_mul(self.gate_up_proj(x), approximate="tanh")
修复安全性
    需要前置改造：加载检查点时把两个投影合并为一个（权重和偏置堆叠，gate在前）。之后由算子
    限制决定：最后一维（gate与up合计）不超过1024且32字节对齐，行数不超过200000。LLM的宽度
    通常大得多，此时候选项会以未满足的约束报告为不适用。精确（erf）GELU
    （approximate="none"）是另一种映射，不在此匹配。
参考
    catalog/ffn/npu_gelu_mul.toml；rules/ffn/geglu.py（合并形式）。
""",
}


def search(gate, up):
    return F.gelu(gate, approximate="tanh") * up


def replace(gate, up):
    return torch_npu.npu_gelu_mul(torch.cat([gate, up], dim=-1), approximate="tanh")


def naive_erf_mode(gate, up):
    return torch_npu.npu_gelu_mul(torch.cat([gate, up], dim=-1), approximate="none")
