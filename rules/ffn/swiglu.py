"""SwiGLU MLP with separate gate/up projections becomes `npu_swiglu` on a merged `[gate, up]` projection.

What it does
    Finds `down(silu(gate(x)) * up(x))` with `gate` and `up` two separate linear layers
    on the same input (Llama, Qwen2/3, Mistral MLPs). It proposes one merged projection
    `gate_up = linear(x, cat([W_gate, W_up]))`, `torch_npu.npu_swiglu(gate_up, dim=-1)`
    and the unchanged down projection.
Why
    Two GEMMs on the same input become one wider GEMM (better use of the cube units, one
    read of x), and silu, the multiply and their intermediates become one kernel. The
    MLP is the largest block of every dense layer, in prefill and in decode.
Example
    return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))
Use instead
    # at load time: self.w_gate_up.weight = cat([w_gate.weight, w_up.weight], 0)
    return self.w_down(torch_npu.npu_swiglu(self.w_gate_up(x), dim=-1))
Fix safety
    Needs prerequisites. The weights are merged in the order `[gate, up]`:
    npu_swiglu applies silu to the FIRST half; `[up, gate]` silently computes
    `silu(up) * gate`. The merge is mechanical (a load-time weight hook). Only for
    `act_fn = silu` with no clamp, bias or offset on either branch (see
    ffn.swiglu_clamped_reject for the GPT-OSS variant). The operator page lists the A2
    series; on other chips the check answers with the product list.
References
    catalog/ffn/npu_swiglu.toml; pitfalls.md 3.3, 3.4; expert_choices_devset.json notes.
"""
import torch
import torch.nn.functional as F

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "ffn.swiglu",
    "title": "down(silu(gate(x)) * up(x)) -> npu_swiglu on merged [gate, up] (merge is a prerequisite)",
    "module": "ffn",
    "apis": ["npu_swiglu"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "merge_gate_up",
         "en": "Merge gate_proj and up_proj into one gate_up_proj with weight cat([W_gate, W_up], dim=0) (gate first), with a load-time weight hook.",
         "zh": "把gate_proj与up_proj合并为一个gate_up_proj，权重为cat([W_gate, W_up], dim=0)（gate在前），并加载时通过权重钩子完成。",
         "mechanical": True},
    ],
    "checks": ["npu_swiglu:*"],
    "facts": {"activation": "silu", "ffn_gated": True, "glu_order": "separate", "glu_clamped": False},
    "hints": {"class_names": ["LlamaMLP", "Qwen2MLP", "Qwen3MLP", "MistralMLP"]},
    "inputs": {
        "x": {"shape": ["B", "S", "H"], "dtype": "act"},
        "gate_weight": {"shape": ["I", "H"], "dtype": "act", "scale": 0.1},
        "up_weight": {"shape": ["I", "H"], "dtype": "act", "scale": 0.1},
        "down_weight": {"shape": ["H", "I"], "dtype": "act", "scale": 0.1},
    },
    "sizes": {"B": 2, "S": 3, "H": 64, "I": 128},
    "dtypes": ["float32", "bfloat16"],
    "tolerance": {"bfloat16": {"atol": 0.02}},
    "match": {"lookalikes": {"lookalike_gelu_gate": "fixtures/swiglu_nomatch_gelu_gate.py",
                             "lookalike_clamped": "fixtures/swiglu_nomatch_clamped.py"}},
    "near_misses": [
        {"file": "fixtures/swiglu_nomatch_gelu_gate.py",
         "reason": "the gate activation is GELU, not SiLU: a GeGLU (see ffn.geglu)"},
        {"file": "fixtures/swiglu_nomatch_clamped.py",
         "reason": "the gate and up branches are clamped and up is offset by 1: GPT-OSS SwiGLU, not npu_swiglu (see ffn.swiglu_clamped_reject)"},
    ],
    "doc_zh": """gate/up分离的SwiGLU MLP替换为在合并的[gate, up]投影上调用npu_swiglu。

功能
    识别down(silu(gate(x)) * up(x))，其中gate和up是作用于同一输入的两个独立线性层（Llama、
    Qwen2/3、Mistral的MLP）。建议改为一个合并投影gate_up = linear(x, cat([W_gate, W_up]))、
    torch_npu.npu_swiglu(gate_up, dim=-1)，down投影不变。
原因
    同一输入上的两个GEMM合并为一个更宽的GEMM（更好地利用cube单元，只读一次x），silu、乘法
    及其中间结果合并为一个内核。MLP是每个稠密层最大的模块，预填充和解码都受益。
示例
    return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))
替代写法
    # 加载时：self.w_gate_up.weight = cat([w_gate.weight, w_up.weight], 0)
    return self.w_down(torch_npu.npu_swiglu(self.w_gate_up(x), dim=-1))
修复安全性
    需要前置改造。权重须按[gate, up]顺序合并：npu_swiglu对前一半做silu，若顺序为[up, gate]会
    静默算成silu(up) * gate。合并可机械完成（加载时权重钩子）。仅适用于act_fn = silu且两个
    分支都没有clamp、bias或偏移的情况（GPT-OSS变体见ffn.swiglu_clamped_reject）。算子文档
    列出的是A2系列；其他芯片由检查给出产品列表。
参考
    catalog/ffn/npu_swiglu.toml；pitfalls.md 3.3、3.4；expert_choices_devset.json notes。
""",
}


def search(x, gate_weight, up_weight, down_weight):
    return F.linear(F.silu(F.linear(x, gate_weight)) * F.linear(x, up_weight), down_weight)


def search_matmul(x, gate_weight, up_weight, down_weight):
    gate = x @ gate_weight.t()
    up = x @ up_weight.t()
    hidden = gate * torch.sigmoid(gate) * up
    return hidden @ down_weight.t()


def lookalike_gelu_gate(x, gate_weight, up_weight, down_weight):
    # GeGLU: GELU where SwiGLU has SiLU
    return F.linear(F.gelu(F.linear(x, gate_weight)) * F.linear(x, up_weight), down_weight)


def lookalike_clamped(x, gate_weight, up_weight, down_weight, limit=0.5, alpha=1.702):
    # GPT-OSS: both branches clamped, a scaled sigmoid, and up offset by one
    gate = F.linear(x, gate_weight).clamp(max=limit)
    up = F.linear(x, up_weight).clamp(-limit, limit)
    return F.linear(gate * torch.sigmoid(alpha * gate) * (up + 1), down_weight)


def replace(x, gate_weight, up_weight, down_weight):
    gate_up_weight = torch.cat([gate_weight, up_weight], dim=0)
    return F.linear(torch_npu.npu_swiglu(F.linear(x, gate_up_weight), dim=-1), down_weight)


def naive_up_first_merge(x, gate_weight, up_weight, down_weight):
    # [up, gate] order: npu_swiglu would apply silu to up.
    gate_up_weight = torch.cat([up_weight, gate_weight], dim=0)
    return F.linear(torch_npu.npu_swiglu(F.linear(x, gate_up_weight), dim=-1), down_weight)
