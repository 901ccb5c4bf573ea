"""Per-head RMSNorm on queries and keys (QK-norm) becomes `npu_rms_norm` on each.

What it does
    Finds an RMSNorm over head_dim applied to the query and key heads after the
    projections are viewed as (B, S, N, D) and before RoPE (Qwen3, OLMo-2-style heads,
    Gemma-3). Each becomes `torch_npu.npu_rms_norm(q, q_weight, q_eps)[0]`, with the weight
    of shape (D,) broadcast over the heads.
Why
    Two more full passes over q and k per layer in eager mode; the fused norm reads each
    once. The expert Qwen3 ports call npu_rms_norm for q_norm and k_norm.
Example
    q = self.q_norm(self.q_proj(x).view(*x.shape[:-1], -1, self.head_dim))
    k = self.k_norm(self.k_proj(x).view(*x.shape[:-1], -1, self.head_dim))
Use instead
    q = torch_npu.npu_rms_norm(q, self.q_norm.weight, self.q_norm.variance_epsilon)[0]
    k = torch_npu.npu_rms_norm(k, self.k_norm.weight, self.k_norm.variance_epsilon)[0]
Fix safety
    Safe: the norm runs over the last axis only (gamma of shape (D,)). When a model
    normalises the whole projection (OLMo-2 normalises q over N*D) the weight has N*D
    elements and this is plain norm.rms_norm on the flat projection instead. The
    replacement stays where the norm was (before RoPE); the matcher checks that the
    normalised axis is head_dim.
References
    catalog/norm/npu_rms_norm.toml; reference_chains.md module-attention-gqa (QK head norm
    for qwen3); expert_choices_devset.json (qwen3).
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "norm.qk_norm",
    "title": "per-head RMSNorm of q and k -> npu_rms_norm on each",
    "module": "norm",
    "apis": ["npu_rms_norm"],
    "stages": ["prefill", "decode"],
    "safety": "safe",
    "prerequisites": [],
    "checks": ["npu_rms_norm:*"],
    "facts": {"norm_gamma_dtype": "input"},
    "match": {"independent_returns": True,
              "only_from": {"query_states": ["view", "reshape", "unflatten", "transpose", "input"],
                            "key_states": ["view", "reshape", "unflatten", "transpose", "input"]},
              "explain": [{"when": "_states is add(", "near_miss": "fixtures/qk_norm_nomatch_after_rope.py"},
                          {"when": "_states is matmul(", "near_miss": "fixtures/qk_norm_nomatch_whole_projection.py"},
                          {"when": "_states is linear(", "near_miss": "fixtures/qk_norm_nomatch_whole_projection.py"}]},
    "hints": {"class_names": ["Qwen3RMSNorm", "q_norm", "k_norm"]},
    "inputs": {
        "query_states": {"shape": ["B", "S", "N", "D"], "dtype": "act"},
        "key_states": {"shape": ["B", "S", "KVN", "D"], "dtype": "act"},
        "q_weight": {"shape": ["D"], "dtype": "act", "init": "ones_noise"},
        "k_weight": {"shape": ["D"], "dtype": "act", "init": "ones_noise"},
        "q_eps": {"dtype": "param", "value": 1e-6},
        "k_eps": {"dtype": "param", "value": 1e-6},
    },
    "sizes": {"B": 2, "S": 3, "N": 4, "KVN": 2, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    "near_misses": [
        {"file": "fixtures/qk_norm_nomatch_whole_projection.py",
         "reason": "the norm runs over the whole projection (N*D), not per head: this is norm.rms_norm on the flat tensor"},
        {"file": "fixtures/qk_norm_nomatch_after_rope.py",
         "reason": "the head norm is applied after RoPE: the order is part of the model's numerics and is kept"},
    ],
    "doc_zh": """q、k的逐头RMSNorm（QK-norm），分别替换为npu_rms_norm。

功能
    识别在投影结果视为(B, S, N, D)之后、RoPE之前，对query和key各头在head_dim上做的RMSNorm
    （Qwen3、Gemma-3等）。分别改为torch_npu.npu_rms_norm(q, q_weight, q_eps)[0]，权重形状为
    (D,)，在各头上广播。
原因
    eager模式下每层要再完整遍历q、k两次；融合norm各只读一次。专家Qwen3移植对q_norm和
    k_norm都调用npu_rms_norm。
示例
    q = self.q_norm(self.q_proj(x).view(*x.shape[:-1], -1, self.head_dim))
    k = self.k_norm(self.k_proj(x).view(*x.shape[:-1], -1, self.head_dim))
替代写法
    q = torch_npu.npu_rms_norm(q, self.q_norm.weight, self.q_norm.variance_epsilon)[0]
    k = torch_npu.npu_rms_norm(k, self.k_norm.weight, self.k_norm.variance_epsilon)[0]
修复安全性
    安全：只在最后一维归一化（gamma形状为(D,)）。若模型对整个投影归一化（OLMo-2对q在N*D上
    归一化），权重有N*D个元素，应按norm.rms_norm处理扁平张量。norm必须在RoPE之前；匹配器
    检查最后一维仍是head_dim。
参考
    catalog/norm/npu_rms_norm.toml；reference_chains.md module-attention-gqa（qwen3的QK头
    归一化）；expert_choices_devset.json（qwen3）。
""",
}


def search(query_states, key_states, q_weight, k_weight, q_eps, k_eps):
    dtype = query_states.dtype
    q = query_states.to(torch.float32)
    q = q * torch.rsqrt(q.pow(2).mean(-1, keepdim=True) + q_eps)
    k = key_states.to(torch.float32)
    k = k * torch.rsqrt(k.pow(2).mean(-1, keepdim=True) + k_eps)
    return q_weight * q.to(dtype), k_weight * k.to(dtype)


def search_float_weight(query_states, key_states, q_weight, k_weight, q_eps, k_eps):
    q = query_states.float()
    q = q * torch.rsqrt(q.pow(2).mean(dim=-1, keepdim=True) + q_eps)
    q = (q * q_weight.float()).to(query_states.dtype)
    k = key_states.float()
    k = k * torch.rsqrt(k.pow(2).mean(dim=-1, keepdim=True) + k_eps)
    k = (k * k_weight.float()).to(key_states.dtype)
    return q, k


def replace(query_states, key_states, q_weight, k_weight, q_eps, k_eps):
    q = torch_npu.npu_rms_norm(query_states, q_weight, epsilon=q_eps)[0]
    k = torch_npu.npu_rms_norm(key_states, k_weight, epsilon=k_eps)[0]
    return q, k


def naive_flat_norm(query_states, key_states, q_weight, k_weight, q_eps, k_eps):
    # Normalising over N*D instead of per head mixes the heads' scales.
    def flat(x, w, eps):
        b, s, n, d = x.shape
        y = torch_npu.npu_rms_norm(x.reshape(b, s, n * d), w.repeat(n), epsilon=eps)[0]
        return y.reshape(b, s, n, d)
    return flat(query_states, q_weight, q_eps), flat(key_states, k_weight, k_eps)
