"""Complex-number RoPE on head-major tensors (`view_as_complex(x) * freqs_cis.unsqueeze(1)`, (B, N, S, D)) becomes `npu_rotary_mul(rotary_mode='interleave')`.

What it does
    Finds the DeepSeek-V2 spelling of complex RoPE: x is (B, N, S, D) (the heads already
    before the sequence), viewed as complex pairs `view_as_complex(x.float().reshape(...,
    -1, 2))`, multiplied by a per-position complex table `freqs_cis` of shape (B, S, D/2)
    broadcast over the heads with `unsqueeze(1)`, and turned back with
    `view_as_real(...).flatten(3)`. A product with a unit complex number rotates each
    adjacent pair: that is interleaved RoPE. It proposes
    `npu_rotary_mul(x, cos, sin, rotary_mode='interleave')` per tensor in the BNSD layout,
    cos and sin being the real and imaginary parts of `freqs_cis`, each repeated for its
    pair and given the head axis.
Why
    The complex path runs a float32 cast, a complex view, a complex multiply, a real view
    and a cast back per tensor, with complex tensors the NPU handles poorly; real cos/sin
    tables and one fused kernel per tensor avoid both.
Example
    xq_ = torch.view_as_complex(q_pe.float().reshape(*q_pe.shape[:-1], -1, 2))
    q_pe = torch.view_as_real(xq_ * freqs_cis.unsqueeze(1)).flatten(3).type_as(q_pe)
Use instead
    cos = freqs_cis.real.repeat_interleave(2, dim=-1).unsqueeze(1).to(q_pe.dtype)
    sin = freqs_cis.imag.repeat_interleave(2, dim=-1).unsqueeze(1).to(q_pe.dtype)
    q_pe = torch_npu.npu_rotary_mul(q_pe, cos, sin, rotary_mode="interleave")
Fix safety
    Needs prerequisites. The real cos/sin tables replace `freqs_cis` and are built once
    with the rotary cache, not per call. The table is indexed by position_ids, so it
    carries a batch axis; on A2/A3 the interleave mode documents cos/sin only fully
    broadcast (11SD for a BNSD x): pass one row (cos[:1]) where every sequence of the
    batch uses the same positions, otherwise keep the complex form or call the operator
    per batch row. The eager chain computes in float32 and rounds once; the fused call
    with tables in the activation dtype rounds them too (bf16: about one step).
    `npu_interleave_rope` returns the de-interleaved order and is refused.
References
    catalog/rope/npu_rotary_mul.toml; pitfalls.md 4.2, 4.3, 4.4;
    rules/rope/rope_interleave_complex.py (the (B, S, N, D) form).
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "rope.rope_interleave_complex_bnsd",
    "title": "view_as_complex RoPE on (B, N, S, D) with freqs_cis.unsqueeze(1) (DeepSeek-V2) -> npu_rotary_mul(rotary_mode='interleave') BNSD with real cos/sin",
    "module": "rope",
    "apis": ["npu_rotary_mul"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "real_cos_sin_tables",
         "en": "Replace the complex freqs_cis table by real cos/sin tables repeated element-wise (repeat_interleave(2)), built once with the rotary cache.",
         "zh": "用逐元素重复（repeat_interleave(2)）的实数cos/sin表替代复数freqs_cis表，并随旋转缓存一次性构建。",
         "mechanical": True},
        {"id": "head_major_operands",
         "en": "Confirm q and k are (B, N, S, D) (heads before the sequence) and freqs_cis is (B, S, D/2) broadcast over the heads by unsqueeze(1); a (B, S, N, D) tensor with a (S, D/2) table unsqueezed at axis 1 computes the same numbers but needs the BSND call with 1S1D tables (rope.rope_interleave_complex).",
         "zh": "确认q和k为(B, N, S, D)（头维在序列维之前），且freqs_cis为(B, S, D/2)并经unsqueeze(1)在头维上广播；若张量为(B, S, N, D)、表为(S, D/2)且在第1维unsqueeze，数值相同，但应使用BSND调用与1S1D表（rope.rope_interleave_complex）。",
         "mechanical": False},
        {"id": "interleave_table_batch_one",
         "en": "npu_rotary_mul's interleave mode documents cos/sin only as 11SD for a BNSD x; the table comes from position_ids and carries a batch axis. Pass a single row (cos[:1], sin[:1]) where every sequence in the batch uses the same positions, otherwise keep the eager form or call the operator per batch row.",
         "zh": "npu_rotary_mul的interleave模式在x为BNSD时只列出11SD形状的cos/sin；该表由position_ids生成，带有batch维。只有当batch中每条序列的位置相同时才能只传一行（cos[:1]、sin[:1]），否则保留原写法或按batch逐行调用算子。",
         "mechanical": False},
    ],
    "checks": ["npu_rotary_mul:*"],
    "facts": {"rotary_mode": "interleave", "layout": "BNSD"},
    "rejects": [
        {"api": "npu_interleave_rope",
         "en": "npu_interleave_rope writes its result de-interleaved (even elements first): element for element it differs from view_as_real(...).flatten().",
         "zh": "npu_interleave_rope的输出为解交错顺序（偶数元素在前）：与view_as_real(...).flatten()逐元素不同。",
         "needs": "D = 64 and a consumer that only forms dot products of q and k permuted the same way (DeepSeek MLA's fused prolog); otherwise npu_rotary_mul(rotary_mode='interleave')"},
    ],
    "inputs": {
        "xq": {"shape": ["B", "N", "S", "D"], "dtype": "act"},
        "xk": {"shape": ["B", 1, "S", "D"], "dtype": "act"},
        "freqs_cis": {"shape": ["B", "S", "D // 2"], "dtype": "complex64", "init": "unit_complex"},
    },
    "sizes": {"B": 2, "S": 5, "N": 4, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    # no `layouts` on xq: DeepSeek-V2 splits the heads with a shape held in one tuple
    # (`q.view(query_shape)`), an order the layout reading does not follow; the head-major
    # order is a prerequisite the engineer confirms instead
    "match": {"partial_returns": True, "not_from": {"freqs_cis": ["complex"]},
              "explain": [{"when": "complex(", "near_miss": "fixtures/rope_interleave_complex_bnsd_nomatch_complex_gate.py"}]},
    "near_misses": [
        {"file": "fixtures/rope_interleave_complex_bnsd_nomatch_complex_gate.py",
         "reason": "the complex product is not a rotation by a unit table (a learned complex scale): not RoPE"},
    ],
    "doc_zh": """头维在前（(B, N, S, D)）的复数RoPE（view_as_complex(x) * freqs_cis.unsqueeze(1)）替换为npu_rotary_mul(rotary_mode='interleave')。

功能
    识别DeepSeek-V2的复数RoPE写法：x为(B, N, S, D)（头维已在序列维之前），以
    view_as_complex(x.float().reshape(..., -1, 2))看作复数对，乘以形状为(B, S, D/2)、经
    unsqueeze(1)在头维上广播的逐位置复数表freqs_cis，再用view_as_real(...).flatten(3)还原。
    与单位复数相乘即旋转每一对相邻元素：这就是交错RoPE。建议对每个张量以BNSD布局调用
    npu_rotary_mul(x, cos, sin, rotary_mode='interleave')，cos和sin取freqs_cis的实部和虚部，
    各自按元素对重复并加上头维。
原因
    复数路径每个张量都要做float32转换、复数视图、复数乘法、实数视图和回转，而NPU处理复数张量
    效率很低；实数cos/sin表加每个张量一次融合内核可同时避免这两点。
示例
    xq_ = torch.view_as_complex(q_pe.float().reshape(*q_pe.shape[:-1], -1, 2))
    q_pe = torch.view_as_real(xq_ * freqs_cis.unsqueeze(1)).flatten(3).type_as(q_pe)
替代写法
    cos = freqs_cis.real.repeat_interleave(2, dim=-1).unsqueeze(1).to(q_pe.dtype)
    sin = freqs_cis.imag.repeat_interleave(2, dim=-1).unsqueeze(1).to(q_pe.dtype)
    q_pe = torch_npu.npu_rotary_mul(q_pe, cos, sin, rotary_mode="interleave")
修复安全性
    需要前置改造。实数cos/sin表取代freqs_cis，并随旋转缓存一次性构建，而不是每次调用都构建。
    该表按position_ids取得，因此带有batch维；A2/A3上interleave模式只支持完全广播的cos/sin
    （x为BNSD时为11SD）：只有batch中每条序列的位置相同时才能只传一行（cos[:1]），否则保留复数
    写法或按batch逐行调用算子。eager链在float32中计算、只舍入一次；表为激活dtype时融合调用也会
    舍入表（bf16约一个步长）。npu_interleave_rope返回解交错顺序，因此被拒绝。
参考
    catalog/rope/npu_rotary_mul.toml；pitfalls.md 4.2、4.3、4.4；
    rules/rope/rope_interleave_complex.py（(B, S, N, D)写法）。
""",
}


def search(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    table = freqs_cis.unsqueeze(1)
    xq_out = torch.view_as_real(xq_ * table).flatten(3).type_as(xq)
    xk_out = torch.view_as_real(xk_ * table).flatten(3).type_as(xk)
    return xq_out, xk_out


def replace(xq, xk, freqs_cis):
    cos = freqs_cis.real.repeat_interleave(2, dim=-1).unsqueeze(1).to(xq.dtype)
    sin = freqs_cis.imag.repeat_interleave(2, dim=-1).unsqueeze(1).to(xq.dtype)
    return (torch_npu.npu_rotary_mul(xq, cos, sin, rotary_mode="interleave"),
            torch_npu.npu_rotary_mul(xk, cos, sin, rotary_mode="interleave"))


def naive_half_mode(xq, xk, freqs_cis):
    # half pairing (x[i], x[i + D/2]) with the same tables: a different rotation
    cos = freqs_cis.real.repeat_interleave(2, dim=-1).unsqueeze(1).to(xq.dtype)
    sin = freqs_cis.imag.repeat_interleave(2, dim=-1).unsqueeze(1).to(xq.dtype)
    return torch_npu.npu_rotary_mul(xq, cos, sin), torch_npu.npu_rotary_mul(xk, cos, sin)
