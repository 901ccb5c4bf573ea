"""Partial interleaved RoPE (GLM style: first rotary_dim lanes, table half spread) becomes `npu_rotary_mul(rotary_mode='interleave')` on the slice.

What it does
    Finds the GLM / GLM-4 application with partial rotary: the cos/sin tables are
    `cat(freqs, freqs)` of width rotary_dim, their first half is spread element-wise
    (`repeat_interleave(2, dim=-1)`), only `x[..., :rotary_dim]` is rotated by adjacent
    pairs and the untouched tail is concatenated back. It proposes the same table
    preparation, `torch_npu.npu_rotary_mul(x[..., :r], c, s, rotary_mode='interleave')` on
    the rotated slice and the same concatenation.
Why
    The eager rotated part costs two strided gathers, a negation, a stack, a flatten, two
    multiplies and an add per tensor; the fused kernel does them in one pass. The
    operator rotates its whole last axis, so it is given the slice, as its documentation
    asks for partial rotary.
Example
    c = cos.unsqueeze(1)
    c = c[..., : c.shape[-1] // 2].repeat_interleave(2, dim=-1)
    r = c.shape[-1]
    q_rot, q_pass = q[..., :r], q[..., r:]
    return torch.cat([q_rot * c + pair_turn(q_rot) * s, q_pass], dim=-1)
Use instead
    c = cos.unsqueeze(1)
    c = c[..., : c.shape[-1] // 2].repeat_interleave(2, dim=-1)
    r = c.shape[-1]
    q_rot = torch_npu.npu_rotary_mul(q[..., :r].contiguous(), c, s, rotary_mode='interleave')
    return torch.cat([q_rot, q[..., r:]], dim=-1)
Fix safety
    Needs a prerequisite: the interleave mode documents cos/sin only broadcast over batch
    and heads (11SD for BNSD x), while the HF tables carry the batch axis from
    position_ids; one row may be passed only when every sequence in the batch has the
    same positions. The rotated width (rope_dim, from partial_rotary_factor) must be even
    and below 896, and B*N below 1000; the checks read them. The slice is made contiguous
    before the call, one copy of the rotated lanes. Half-mode kernels pair other lanes and
    must not be used.
References
    catalog/rope/npu_rotary_mul.toml (interleave formula; partial rotary needs the slice);
    pitfalls.md 4.2; rope.rope_partial (the half-mode counterpart).
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "rope.rope_interleave_half_table_partial",
    "title": "partial interleaved RoPE (GLM style, spread table half) -> npu_rotary_mul(rotary_mode='interleave') on the slice",
    "module": "rope",
    "apis": ["npu_rotary_mul"],
    "stages": ["prefill", "decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "interleave_table_batch_one",
         "en": "npu_rotary_mul's interleave mode documents cos/sin only as 11SD (BNSD x) or 1S1D (BSND x); the model's tables carry a batch axis from position_ids. Pass a single row (cos[:1], sin[:1]) where every sequence in the batch uses the same positions, otherwise keep the eager form or call the operator per batch row.",
         "zh": "npu_rotary_mul的interleave模式文档只列出cos/sin为11SD（x为BNSD）或1S1D（x为BSND）；模型的cos/sin表由position_ids生成，带有batch维。只有当batch中每条序列的位置相同时才能只传一行（cos[:1]、sin[:1]），否则保留原写法或按batch逐行调用算子。",
         "mechanical": False},
    ],
    "checks": ["npu_rotary_mul:*"],
    "facts": {"rotary_mode": "interleave", "layout": "BNSD"},
    "rejects": [
        {"api": "npu_apply_rotary_pos_emb",
         "en": "npu_apply_rotary_pos_emb supports only the half mode on A2/A3 and needs cos/sin as wide as q; applied here it pairs other lanes and silently changes q/k.",
         "zh": "npu_apply_rotary_pos_emb在A2/A3上只支持half模式，且要求cos/sin与q同宽；用于此处会配对错误的元素，静默改变q/k。",
         "needs": "npu_rotary_mul(rotary_mode='interleave') on the rotated slice"},
    ],
    "hints": {"class_names": ["RotaryEmbedding"]},
    "inputs": {
        "q": {"shape": ["B", "N", "S", "D"], "dtype": "act"},
        "k": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "cos": {"shape": ["B", "S", "R"], "dtype": "act", "init": "half_repeated"},
        "sin": {"shape": ["B", "S", "R"], "dtype": "act", "init": "half_repeated"},
    },
    "sizes": {"B": 2, "N": 4, "KVN": 2, "S": 5, "D": 64, "R": 32},
    "dtypes": ["float32", "bfloat16"],
    "match": {"partial_returns": True,
              "contains": ["rope.rope_interleave_half_table"],
              "lookalikes": {"lookalike_reverse_turn": "fixtures/rope_interleave_half_table_partial_nomatch_reverse_turn.py"}},
    "near_misses": [
        {"file": "fixtures/rope_interleave_half_table_partial_nomatch_reverse_turn.py",
         "reason": "the pair turn on the rotated slice negates the even element instead of the odd one (stack(x_odd, -x_even)): the rotation runs the other way"},
    ],
    "doc_zh": """部分旋转的交错式RoPE（GLM风格：只旋转前rotary_dim维，表的前一半逐元素展开）替换为对切片调用npu_rotary_mul(rotary_mode='interleave')。

功能
    识别GLM / GLM-4的部分旋转写法：cos/sin表为宽度rotary_dim的cat(freqs, freqs)，取其前一半
    逐元素展开（repeat_interleave(2, dim=-1)），只对x[..., :rotary_dim]按相邻元素对旋转，再把
    未旋转的尾部拼回。建议保留同样的表准备，对旋转切片调用
    torch_npu.npu_rotary_mul(x[..., :r], c, s, rotary_mode='interleave')，并保持同样的拼接。
原因
    eager方式的旋转部分每个张量需要两次跨步取数、取负、stack、flatten、两次乘法和一次加法；
    融合内核一次完成。算子旋转整个最后一维，因此按其文档对部分旋转的要求传入切片。
示例
    c = cos.unsqueeze(1)
    c = c[..., : c.shape[-1] // 2].repeat_interleave(2, dim=-1)
    r = c.shape[-1]
    q_rot, q_pass = q[..., :r], q[..., r:]
    return torch.cat([q_rot * c + pair_turn(q_rot) * s, q_pass], dim=-1)
替代写法
    c = cos.unsqueeze(1)
    c = c[..., : c.shape[-1] // 2].repeat_interleave(2, dim=-1)
    r = c.shape[-1]
    q_rot = torch_npu.npu_rotary_mul(q[..., :r].contiguous(), c, s, rotary_mode='interleave')
    return torch.cat([q_rot, q[..., r:]], dim=-1)
修复安全性
    需要前置条件：interleave模式文档只允许cos/sin在batch与head上完全广播（x为BNSD时为11SD），
    而HF的表由position_ids生成，带batch维；只有batch中每条序列位置相同时才能只传一行。旋转宽度
    （rope_dim，由partial_rotary_factor得出）须为偶数且小于896，B*N须小于1000，由检查项确认。
    调用前切片会被拷贝为连续张量（只拷贝旋转部分）。half模式内核配对的元素不同，不得使用。
参考
    catalog/rope/npu_rotary_mul.toml（interleave公式；部分旋转需传切片）；pitfalls.md 4.2；
    rope.rope_partial（half模式的对应规则）。
""",
}


def search(q, k, cos, sin):
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    c = c[..., : c.shape[-1] // 2].repeat_interleave(2, dim=-1)
    s = s[..., : s.shape[-1] // 2].repeat_interleave(2, dim=-1)
    r = c.shape[-1]
    q_rot, q_pass = q[..., :r], q[..., r:]
    k_rot, k_pass = k[..., :r], k[..., r:]
    q_turned = torch.stack((-q_rot[..., 1::2], q_rot[..., 0::2]), dim=-1).flatten(-2)
    k_turned = torch.stack((-k_rot[..., 1::2], k_rot[..., 0::2]), dim=-1).flatten(-2)
    q_out = torch.cat([q_rot * c + q_turned * s, q_pass], dim=-1)
    k_out = torch.cat([k_rot * c + k_turned * s, k_pass], dim=-1)
    return q_out, k_out


def search_open_start(q, k, cos, sin):
    # the even lanes spelled x[..., ::2]
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    c = c[..., : c.shape[-1] // 2].repeat_interleave(2, dim=-1)
    s = s[..., : s.shape[-1] // 2].repeat_interleave(2, dim=-1)
    r = c.shape[-1]
    q_rot, q_pass = q[..., :r], q[..., r:]
    k_rot, k_pass = k[..., :r], k[..., r:]
    q_turned = torch.stack((-q_rot[..., 1::2], q_rot[..., ::2]), dim=-1).flatten(-2)
    k_turned = torch.stack((-k_rot[..., 1::2], k_rot[..., ::2]), dim=-1).flatten(-2)
    q_out = torch.cat([q_rot * c + q_turned * s, q_pass], dim=-1)
    k_out = torch.cat([k_rot * c + k_turned * s, k_pass], dim=-1)
    return q_out, k_out


def lookalike_reverse_turn(q, k, cos, sin):
    # stack(x_odd, -x_even) on the rotated slice: the inverse rotation of every pair
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    c = c[..., : c.shape[-1] // 2].repeat_interleave(2, dim=-1)
    s = s[..., : s.shape[-1] // 2].repeat_interleave(2, dim=-1)
    r = c.shape[-1]
    q_rot, q_pass = q[..., :r], q[..., r:]
    k_rot, k_pass = k[..., :r], k[..., r:]
    q_turned = torch.stack((q_rot[..., 1::2], -q_rot[..., 0::2]), dim=-1).flatten(-2)
    k_turned = torch.stack((k_rot[..., 1::2], -k_rot[..., 0::2]), dim=-1).flatten(-2)
    return (torch.cat([q_rot * c + q_turned * s, q_pass], dim=-1),
            torch.cat([k_rot * c + k_turned * s, k_pass], dim=-1))


def replace(q, k, cos, sin):
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    c = c[..., : c.shape[-1] // 2].repeat_interleave(2, dim=-1)
    s = s[..., : s.shape[-1] // 2].repeat_interleave(2, dim=-1)
    r = c.shape[-1]
    q_rot = torch_npu.npu_rotary_mul(q[..., :r].contiguous(), c, s, rotary_mode="interleave")
    k_rot = torch_npu.npu_rotary_mul(k[..., :r].contiguous(), c, s, rotary_mode="interleave")
    return torch.cat([q_rot, q[..., r:]], dim=-1), torch.cat([k_rot, k[..., r:]], dim=-1)


def naive_half_mode_on_slice(q, k, cos, sin):
    # the half kernel on the right slice: the pairs are x[i], x[i + r/2], not neighbours
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    r = c.shape[-1]
    q_rot = torch_npu.npu_rotary_mul(q[..., :r].contiguous(), c, s)
    k_rot = torch_npu.npu_rotary_mul(k[..., :r].contiguous(), c, s)
    return torch.cat([q_rot, q[..., r:]], dim=-1), torch.cat([k_rot, k[..., r:]], dim=-1)
