"""SwiGLU whose gate projection is scaled by a constant (`silu(gate_proj(x) * m) * up_proj(x)`) becomes `npu_swiglu` once `m` is folded into the gate rows of a merged projection.

What it does
    Finds the SwiGLU of Falcon-H1-style MLPs (muP multipliers): the gate
    projection's output is multiplied by a value fixed at load time (a config
    multiplier held on the module) before silu: `silu(gate_proj(x) * m) * up_proj(x)`.
    It proposes a merged projection whose gate rows are `m * W_gate` (and bias
    `m * b_gate`), then `torch_npu.npu_swiglu(gate_up, dim=-1)`.
Why
    `gate_proj(x) * m` is `x @ (m * W_gate)^T (+ m * b_gate)`: the scaling is linear,
    so folding it into the weight is exact and removes a kernel. What is left is the
    plain SwiGLU of ffn.swiglu: two GEMMs on the same input become one, and silu,
    the multiply and their intermediates one kernel.
Example
    y = self.up_proj(x) * self.act_fn(self.gate_proj(x) * self.gate_multiplier)
Use instead
    # at load time: self.gate_up_proj.weight = cat([gate_multiplier * W_gate, W_up], 0)
    y = torch_npu.npu_swiglu(self.gate_up_proj(x), dim=-1)
Fix safety
    Needs prerequisites: the multiplier is folded into the gate weight (and bias) and
    the projections merged, gate first, when the checkpoint is loaded. The multiplier
    must not change between calls: a value computed in the forward (another
    projection, an activation) cannot be folded and does not match. In bfloat16 the
    folded weight rounds once where the chain rounds the product; the difference is
    within one rounding step.
References
    catalog/ffn/npu_swiglu.toml; rules/ffn/swiglu.py.
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "ffn.swiglu_scaled_gate",
    "title": "silu(gate_proj(x) * m) * up_proj(x) -> fold m into W_gate, merge, npu_swiglu",
    "module": "ffn",
    "apis": ["npu_swiglu"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "fold_gate_multiplier",
         "en": "Fold the gate multiplier into the gate projection at load time: W_gate := m * W_gate (and b_gate := m * b_gate).",
         "zh": "加载时把gate乘数折叠进gate投影：W_gate := m * W_gate（偏置同样b_gate := m * b_gate）。",
         "mechanical": False},
        {"id": "merge_gate_up",
         "en": "Merge the scaled gate_proj and up_proj into one gate_up_proj with weight cat([m * W_gate, W_up], dim=0) (gate first).",
         "zh": "把缩放后的gate_proj与up_proj合并为一个gate_up_proj，权重为cat([m * W_gate, W_up], dim=0)（gate在前）。",
         "mechanical": False},
    ],
    "checks": ["npu_swiglu:*"],
    "facts": {"activation": "silu", "ffn_gated": True, "glu_order": "separate", "glu_clamped": False},
    "inputs": {
        "x": {"shape": ["B", "S", "H"], "dtype": "act"},
        "gate_weight": {"shape": ["I", "H"], "dtype": "act", "scale": 0.1},
        "up_weight": {"shape": ["I", "H"], "dtype": "act", "scale": 0.1},
        "multiplier": {"dtype": "param", "value": 0.75},
    },
    "sizes": {"B": 2, "S": 3, "H": 64, "I": 128},
    "dtypes": ["float32", "bfloat16"],
    "tolerance": {"bfloat16": {"atol": 0.02}},
    "match": {"not_from": {"multiplier": ["linear", "matmul", "einsum", "bmm", "silu", "sigmoid", "gelu", "relu", "tanh",
                                          "softmax", "mul", "add", "sub", "div", "exp", "chunk", "split", "getitem"]},
              "near_miss_share": 0.8,
              "explain": [{"when": "multiplier is computed by", "near_miss": "fixtures/swiglu_scaled_gate_nomatch_computed_scale.py"}]},
    "near_misses": [
        {"file": "fixtures/swiglu_scaled_gate_nomatch_computed_scale.py",
         "reason": "the gate is multiplied by a value the forward computes, not a load-time constant: it cannot be folded into the weight"},
    ],
    "doc_zh": """gate投影乘以常数的SwiGLU（silu(gate_proj(x) * m) * up_proj(x)），把m折叠进合并投影的gate行后替换为npu_swiglu。

功能
    识别Falcon-H1写法MLP（muP乘数）中的SwiGLU：gate投影的输出在silu之前乘以一个加载时即固定的
    值（模块上保存的配置乘数）：silu(gate_proj(x) * m) * up_proj(x)。建议使用gate行为m * W_gate
    （偏置为m * b_gate）的合并投影，再调用torch_npu.npu_swiglu(gate_up, dim=-1)。
原因
    gate_proj(x) * m即x @ (m * W_gate)^T（+ m * b_gate）：缩放是线性的，折叠进权重完全等价，并
    省去一个内核。剩下的就是ffn.swiglu的普通SwiGLU：同一输入上的两个GEMM合并为一个，silu、乘法
    及其中间结果合并为一个内核。
示例
    y = self.up_proj(x) * self.act_fn(self.gate_proj(x) * self.gate_multiplier)
替代写法
    # 加载时：self.gate_up_proj.weight = cat([gate_multiplier * W_gate, W_up], 0)
    y = torch_npu.npu_swiglu(self.gate_up_proj(x), dim=-1)
修复安全性
    需要前置改造：加载检查点时把乘数折叠进gate权重（及偏置），再按gate在前合并两个投影。乘数在
    各次调用之间不能变化：在forward中计算出的值（另一个投影、某个激活）无法折叠，不在此匹配。
    bfloat16下折叠后的权重只舍入一次，而原计算链对乘积舍入；差异在一个舍入步长之内。
参考
    catalog/ffn/npu_swiglu.toml；rules/ffn/swiglu.py。
""",
}


def search(x, gate_weight, up_weight, multiplier):
    return F.silu(F.linear(x, gate_weight) * multiplier) * F.linear(x, up_weight)


def search_sigmoid(x, gate_weight, up_weight, multiplier):
    gate = F.linear(x, gate_weight) * multiplier
    return gate * torch.sigmoid(gate) * F.linear(x, up_weight)


def replace(x, gate_weight, up_weight, multiplier):
    gate_up_weight = torch.cat([gate_weight * multiplier, up_weight], dim=0)
    return torch_npu.npu_swiglu(F.linear(x, gate_up_weight), dim=-1)


def naive_unscaled(x, gate_weight, up_weight, multiplier):
    # merging without the fold drops the multiplier
    gate_up_weight = torch.cat([gate_weight, up_weight], dim=0)
    return torch_npu.npu_swiglu(F.linear(x, gate_up_weight), dim=-1)
