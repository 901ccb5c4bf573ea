"""Complex-number RoPE (`view_as_complex(x) * freqs_cis`) becomes `npu_rotary_mul(rotary_mode='interleave')`.

What it does
    Finds the Meta-Llama/DeepSeek reference spelling: x viewed as complex pairs
    `view_as_complex(x.float().reshape(..., -1, 2))`, multiplied by a complex table
    `freqs_cis`, and turned back with `view_as_real(...).flatten(3)`. That is interleaved
    RoPE; it proposes `npu_rotary_mul(x, cos, sin, rotary_mode='interleave')` with cos and
    sin taken from the real and imaginary parts of `freqs_cis`, repeated element-wise.
Why
    Complex multiplies run in float32 on separate kernels (view, cast, complex multiply,
    view back, cast), with complex tensors the NPU handles poorly. Real-valued cos/sin
    and one fused kernel avoid both.
Example
    pairs = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    return torch.view_as_real(pairs * freqs_cis).flatten(3).type_as(xq)
Use instead
    cos = freqs_cis.real.repeat_interleave(2, dim=-1)[None, :, None, :].to(xq.dtype)
    sin = freqs_cis.imag.repeat_interleave(2, dim=-1)[None, :, None, :].to(xq.dtype)
    return torch_npu.npu_rotary_mul(xq, cos, sin, rotary_mode='interleave')
Fix safety
    Needs prerequisites: the cos/sin tables replace `freqs_cis`; build them once with the
    cache (rope.rope_cos_sin_precompute) rather than per call. A table kept with a unit
    axis ((S, 1, D/2), Llama 4's vision encoder, viewed to (1, S, 1, D/2) by a helper) is
    squeezed to (S, D/2) before the tables are built. The eager chain computes
    in float32 and rounds once; the fused op with cos/sin in the activation dtype rounds
    the table too (bf16: about one step). `npu_interleave_rope` (D = 64) returns the
    de-interleaved order and is not an element-for-element replacement here.
References
    catalog/rope/npu_rotary_mul.toml; pitfalls.md 4.2, 4.3.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "rope.rope_interleave_complex",
    "title": "view_as_complex RoPE (freqs_cis) -> npu_rotary_mul(rotary_mode='interleave') with real cos/sin",
    "module": "rope",
    "apis": ["npu_rotary_mul"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "real_cos_sin_tables",
         "en": "Replace the complex freqs_cis table by real cos/sin tables repeated element-wise (repeat_interleave(2)), built once with the rotary cache.",
         "zh": "用逐元素重复（repeat_interleave(2)）的实数cos/sin表替代复数freqs_cis表，并随旋转缓存一次性构建。",
         "mechanical": True},
    ],
    "checks": ["npu_rotary_mul:*"],
    "facts": {"rotary_mode": "interleave", "layout": "BSND"},
    "rejects": [
        {"api": "npu_interleave_rope",
         "en": "npu_interleave_rope writes its result de-interleaved (even elements first): element for element it differs from view_as_real(...).flatten().",
         "zh": "npu_interleave_rope的输出为解交错顺序（偶数元素在前）：与view_as_real(...).flatten()逐元素不同。",
         "needs": "D = 64 and a consumer that only forms dot products of q and k permuted the same way (DeepSeek MLA); otherwise npu_rotary_mul(rotary_mode='interleave')"},
    ],
    "inputs": {
        "xq": {"shape": ["B", "S", "N", "D"], "dtype": "act"},
        "xk": {"shape": ["B", "S", "KVN", "D"], "dtype": "act"},
        "freqs_cis": {"shape": ["S", "D // 2"], "dtype": "complex64", "init": "unit_complex"},
    },
    "sizes": {"B": 2, "S": 5, "N": 4, "KVN": 1, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"partial_returns": True,
              "explain": [{"when": "found complex(", "near_miss": "fixtures/rope_interleave_complex_nomatch_complex_gate.py"}]},
    "near_misses": [
        {"file": "fixtures/rope_interleave_complex_nomatch_complex_gate.py",
         "reason": "the complex product is not a rotation by a unit table (a learned complex scale): not RoPE"},
    ],
    "doc_zh": """复数形式的RoPE（view_as_complex(x) * freqs_cis）替换为npu_rotary_mul(rotary_mode='interleave')。

功能
    识别Meta-Llama/DeepSeek参考实现写法：把x视为复数对view_as_complex(x.float().reshape(...,
    -1, 2))，乘以复数表freqs_cis，再用view_as_real(...).flatten(3)转回。这就是交错式RoPE；
    建议改为npu_rotary_mul(x, cos, sin, rotary_mode='interleave')，cos/sin取freqs_cis的实部
    和虚部并逐元素重复。
原因
    复数乘法在float32下由多个独立内核完成（view、类型转换、复数乘、view回、类型转换），且
    NPU对复数张量支持不佳。实数cos/sin加一个融合内核可同时避免这两点。
示例
    pairs = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    return torch.view_as_real(pairs * freqs_cis).flatten(3).type_as(xq)
替代写法
    cos = freqs_cis.real.repeat_interleave(2, dim=-1)[None, :, None, :].to(xq.dtype)
    sin = freqs_cis.imag.repeat_interleave(2, dim=-1)[None, :, None, :].to(xq.dtype)
    return torch_npu.npu_rotary_mul(xq, cos, sin, rotary_mode='interleave')
修复安全性
    需要前置改造：用cos/sin表替代freqs_cis，并随缓存一次性构建（rope.rope_cos_sin_precompute），
    不要每次调用都计算。eager链在float32中计算、只舍入一次；融合算子使用激活类型的cos/sin，
    表本身也被舍入（bf16约一个最小单位）。npu_interleave_rope（D = 64）输出为解交错顺序，
    在此不能逐元素替换。
    带单位轴的表（(S, 1, D/2)，Llama 4视觉编码器的写法，由辅助函数视图为(1, S, 1, D/2)）须先压缩为
    (S, D/2)再构建cos/sin表。
参考
    catalog/rope/npu_rotary_mul.toml；pitfalls.md 4.2、4.3。
""",
}


def search(xq, xk, freqs_cis):
    q_pairs = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    k_pairs = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    table = freqs_cis.view(1, q_pairs.shape[1], 1, q_pairs.shape[-1])
    q_out = torch.view_as_real(q_pairs * table).flatten(3)
    k_out = torch.view_as_real(k_pairs * table).flatten(3)
    return q_out.type_as(xq), k_out.type_as(xk)


def search_list_shape(xq, xk, freqs_cis):
    # Llama 4's vision encoder: the table viewed to a shape built by a list comprehension
    # (1 everywhere but the sequence and the last axis).
    q_pairs = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    k_pairs = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    ndim = q_pairs.ndim
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(q_pairs.shape)]
    table = freqs_cis.view(*shape)
    q_out = torch.view_as_real(q_pairs * table).flatten(3)
    k_out = torch.view_as_real(k_pairs * table).flatten(3)
    return q_out.type_as(xq), k_out.type_as(xk)


def search_unsqueeze_table(xq, xk, freqs_cis):
    fc = freqs_cis.unsqueeze(0).unsqueeze(2)
    q = torch.view_as_complex(xq.float().view(*xq.shape[:-1], xq.shape[-1] // 2, 2))
    k = torch.view_as_complex(xk.float().view(*xk.shape[:-1], xk.shape[-1] // 2, 2))
    q = torch.view_as_real(q * fc).reshape(xq.shape).to(xq.dtype)
    k = torch.view_as_real(k * fc).reshape(xk.shape).to(xk.dtype)
    return q, k


def replace(xq, xk, freqs_cis):
    cos = freqs_cis.real.repeat_interleave(2, dim=-1)[None, :, None, :].to(xq.dtype)
    sin = freqs_cis.imag.repeat_interleave(2, dim=-1)[None, :, None, :].to(xq.dtype)
    return (torch_npu.npu_rotary_mul(xq, cos, sin, rotary_mode="interleave"),
            torch_npu.npu_rotary_mul(xk, cos, sin, rotary_mode="interleave"))


def naive_interleave_rope(xq, xk, freqs_cis):
    # npu_interleave_rope wants (B, N, S, D) and cos/sin in the de-interleaved order.
    cos = torch.cat((freqs_cis.real, freqs_cis.real), dim=-1)[None, None].to(xq.dtype)
    sin = torch.cat((freqs_cis.imag, freqs_cis.imag), dim=-1)[None, None].to(xq.dtype)
    q = torch_npu.npu_interleave_rope(xq.transpose(1, 2), cos, sin).transpose(1, 2)
    k = torch_npu.npu_interleave_rope(xk.transpose(1, 2), cos, sin).transpose(1, 2)
    return q, k
