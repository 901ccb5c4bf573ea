"""Residual add followed by a Gemma-style `(1 + weight)` RMSNorm becomes one `npu_add_rms_norm` call.

What it does
    Finds `h = residual + x` whose sum is normalised by an RMSNorm that scales by
    `1 + weight` (Gemma, Gemma-2/3, Qwen3-Next and their derivatives; with sandwich norms
    `x` is itself the output of a post-attention or post-feed-forward norm) and is also
    carried on as the next residual. It proposes
    `y, _, residual = torch_npu.npu_add_rms_norm(residual, x, gamma, eps)` with
    `gamma = 1 + weight` in the activation dtype; the third output is the new residual.
Why
    The add and the norm each read and write the full hidden state; the fused kernel reads
    both inputs once and writes the normalised output and the sum together. A Gemma
    decoder layer has two such pairs in both stages. The stored weight must never be passed
    as gamma: that drops the `+ 1` (norm.gemma_rms_norm refuses it).
Example
    hidden_states = self.post_attention_layernorm(attn_out)
    hidden_states = residual + hidden_states
    residual = hidden_states
    hidden_states = self.pre_feedforward_layernorm(hidden_states)
Use instead
    gamma = (1.0 + norm.weight.float()).to(residual.dtype)   # once, after loading
    hidden_states, _, residual = torch_npu.npu_add_rms_norm(
        residual, self.post_attention_layernorm(attn_out), gamma, norm.eps)
Fix safety
    Needs prerequisites. As for norm.add_rms_norm, the residual is threaded through the
    layer (the sum feeds only the norm and the next residual) and the first layer's input
    norm keeps the plain (1 + w) norm. npu_add_rms_norm takes gamma in x's dtype, so
    `1 + weight` is rounded to bf16 once, where the model multiplies by it in float32:
    the output can differ by one more bf16 step; the numeric check bounds it.
References
    catalog/norm/npu_add_rms_norm.toml (gamma dtype equals x1's); norm.gemma_rms_norm,
    norm.add_rms_norm; pitfalls.md 5.2 and 5.4.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "norm.add_gemma_rms_norm",
    "title": "residual add + Gemma (1 + w) RMSNorm -> npu_add_rms_norm with gamma = 1 + w",
    "module": "norm",
    "apis": ["npu_add_rms_norm"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "thread_residual",
         "en": "Thread the residual through the decoder layer: the sum residual + x feeds only the norm and the next residual; take the operator's third output as the new residual.",
         "zh": "在解码层中串联残差：residual + x 的结果只用于norm和下一次残差相加；以算子的第三个输出作为新的残差。",
         "mechanical": True},
        {"id": "first_layer_plain_norm",
         "en": "The first layer's input norm has no pending add: keep the (1 + w) norm there (norm.gemma_rms_norm) or pass a zero residual.",
         "zh": "第一层的输入norm之前没有待融合的加法：该处保留(1 + w)的norm（norm.gemma_rms_norm）或传入全零残差。",
         "mechanical": True, "seam": "into_next_layer"},
        {"id": "offset_gamma",
         "en": "Compute gamma = (1 + weight) in the activation dtype once after loading (a buffer next to the stored weight) and pass it, never the stored weight.",
         "zh": "加载后按激活的dtype计算一次gamma = (1 + weight)（与存储的权重并存的buffer）并传入，绝不传入存储的权重。",
         "mechanical": False},
    ],
    "checks": ["npu_add_rms_norm:*"],
    "facts": {},
    "hints": {"class_names": ["DecoderLayer"]},
    "inputs": {
        "residual": {"shape": ["B", "S", "H"], "dtype": "act"},
        "hidden_states": {"shape": ["B", "S", "H"], "dtype": "act"},
        "weight": {"shape": ["H"], "dtype": "act", "init": "randn", "scale": 0.1},
        "eps": {"dtype": "param", "value": 1e-6},
    },
    "sizes": {"B": 2, "S": 5, "H": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"anchor_uses": [{"anchor": 1, "allow": ["add", "return"]}],
              "across_layers": True,
              "not_from": {"residual": ["mul", "div"], "weight": ["add", "sub"]},
              "explain": [{"when": "expected add(...), found input", "near_miss": "fixtures/add_gemma_rms_norm_nomatch_plain_weight.py"}]},
    "near_misses": [
        {"file": "fixtures/add_gemma_rms_norm_nomatch_plain_weight.py",
         "reason": "the norm multiplies by the weight itself (no 1 +): this is norm.add_rms_norm"},
    ],
    "doc_zh": """残差相加后接Gemma风格的(1 + weight) RMSNorm，替换为一次npu_add_rms_norm调用。

功能
    识别h = residual + x，其和被缩放因子为1 + weight的RMSNorm归一化（Gemma、Gemma-2/3、Qwen3-Next
    及其衍生模型；带三明治norm时x本身是注意力或前馈之后的norm输出），并作为下一个残差继续使用。
    建议改为y, _, residual = torch_npu.npu_add_rms_norm(residual, x, gamma, eps)，其中
    gamma = 1 + weight，取激活的dtype；第三个输出是新的残差。
原因
    加法和归一化各自完整读写一遍隐藏状态；融合算子一次读取两个输入，同时写出归一化结果和求和结果。
    Gemma解码层在两个阶段都有两处这样的组合。存储的权重绝不能直接当作gamma：那会丢掉+1
    （norm.gemma_rms_norm会拒绝）。
示例
    hidden_states = self.post_attention_layernorm(attn_out)
    hidden_states = residual + hidden_states
    residual = hidden_states
    hidden_states = self.pre_feedforward_layernorm(hidden_states)
替代写法
    gamma = (1.0 + norm.weight.float()).to(residual.dtype)   # 加载后计算一次
    hidden_states, _, residual = torch_npu.npu_add_rms_norm(
        residual, self.post_attention_layernorm(attn_out), gamma, norm.eps)
修复安全性
    需要前置改造。与norm.add_rms_norm相同，残差须在层内串联（该和只用于norm和下一次残差），第一层
    的输入norm保留普通的(1 + w) norm。npu_add_rms_norm的gamma须与x同dtype，因此1 + weight在bf16下
    舍入一次，而模型以float32相乘：输出可能多差一个bf16精度单位，由数值检查给出上界。
参考
    catalog/norm/npu_add_rms_norm.toml（gamma与x1同dtype）；norm.gemma_rms_norm、
    norm.add_rms_norm；pitfalls.md 5.2与5.4。
""",
}


def search(residual, hidden_states, weight, eps):
    summed = residual + hidden_states
    h = summed.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return (h * (1.0 + weight.float())).type_as(summed), summed


def search_offset_after_cast(residual, hidden_states, weight, eps):
    summed = residual + hidden_states
    h = summed.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps)
    return ((1 + weight.float()) * h.to(summed.dtype)).to(summed.dtype), summed


def replace(residual, hidden_states, weight, eps):
    gamma = (1.0 + weight.float()).to(residual.dtype)
    normed, _, residual = torch_npu.npu_add_rms_norm(residual, hidden_states, gamma, eps)
    return normed, residual


def naive_stored_weight(residual, hidden_states, weight, eps):
    # The stored weight passed as gamma: the +1 is lost.
    normed, _, residual = torch_npu.npu_add_rms_norm(residual, hidden_states, weight, eps)
    return normed, residual
