"""Interleaved (even/odd pair) RoPE on full-width cos/sin becomes `npu_rotary_mul(rotary_mode='interleave')`.

What it does
    Finds `q * cos + turn(q) * sin` (and the same for k) where `turn` rotates adjacent
    pairs, `stack((-x[..., 1::2], x[..., ::2]), -1).flatten(-2)`, and cos/sin already span
    the whole head (the rotary module built them with `repeat_interleave(freqs, 2, -1)`,
    the Cohere and BLT convention). It proposes
    `torch_npu.npu_rotary_mul(x, cos, sin, rotary_mode='interleave')` per tensor, with the
    model's own tables.
Why
    The eager form is two strided gathers, a negation, a stack, a flatten, two multiplies
    and an add per tensor, plus the float32 round trip some models add; the fused kernel
    reads x once. The operator's documented interleave formula is exactly this expression
    for any table of width D, so no table rebuild is needed.
Example
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    turned = torch.stack((-q[..., 1::2], q[..., ::2]), dim=-1).flatten(-2)
    return q * c + turned * s
Use instead
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    return torch_npu.npu_rotary_mul(q, c, s, rotary_mode='interleave')
Fix safety
    Needs a prerequisite. On A2/A3 the interleave mode documents cos/sin only broadcast
    over batch and heads (11SD for BNSD x, 1S1D for BSND); the HF tables carry the batch
    axis (they come from position_ids), which the doc does not list. The tables must be
    passed with batch 1, which is only right when every row of the batch uses the same
    positions. D even and below 896 and B*N below 1000 are checked. A model computing in
    float32 and casting back gets the kernel's own rounding in the activation dtype
    (within the bfloat16 tolerance). Never map this to the half mode or to
    npu_apply_rotary_pos_emb: the pairs differ.
References
    catalog/rope/npu_rotary_mul.toml (interleave formula and r1/r2 shapes);
    pitfalls.md 4.2, 4.3.
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "rope.rope_interleave_rotary_mul",
    "title": "interleaved RoPE with full-width cos/sin -> npu_rotary_mul(rotary_mode='interleave') per tensor",
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
         "en": "npu_apply_rotary_pos_emb supports only the half mode on A2/A3; applied to adjacent-pair RoPE it pairs x[i] with x[i + D/2] and silently changes q/k.",
         "zh": "npu_apply_rotary_pos_emb在A2/A3上只支持half模式；用于相邻元素对的RoPE会把x[i]与x[i + D/2]配对，静默改变q/k。",
         "needs": "npu_rotary_mul(rotary_mode='interleave') with the full-width tables"},
        {"api": "npu_interleave_rope",
         "en": "npu_interleave_rope writes its output de-interleaved (even lanes first) and takes only D = 64: element for element it is not this chain.",
         "zh": "npu_interleave_rope的输出为解交错顺序（偶数位在前），且只支持D = 64：与此链并非逐元素相同。",
         "needs": "npu_rotary_mul(rotary_mode='interleave'), or a model that de-interleaves q/k itself (rope.rope_deinterleave_half)"},
    ],
    "hints": {"class_names": ["RotaryEmbedding"]},
    "inputs": {
        "q": {"shape": ["B", "N", "S", "D"], "dtype": "act"},
        "k": {"shape": ["B", "KVN", "S", "D"], "dtype": "act"},
        "cos": {"shape": ["B", "S", "D"], "dtype": "act", "init": "uniform"},
        "sin": {"shape": ["B", "S", "D"], "dtype": "act", "init": "uniform"},
    },
    "sizes": {"B": 2, "N": 4, "KVN": 2, "S": 5, "D": 64},
    "dtypes": ["float32", "bfloat16"],
    "match": {"partial_returns": True,
              "lookalikes": {"lookalike_reverse_turn": "fixtures/rope_interleave_rotary_mul_nomatch_reverse_turn.py"}},
    "near_misses": [
        {"file": "fixtures/rope_interleave_rotary_mul_nomatch_reverse_turn.py",
         "reason": "the pair turn negates the even element instead of the odd one (stack(x_odd, -x_even)): the rotation runs the other way"},
    ],
    "doc_zh": """cos/sin已为完整宽度的交错式（奇偶相邻配对）RoPE替换为npu_rotary_mul(rotary_mode='interleave')。

功能
    识别q * cos + turn(q) * sin（k同理），其中turn对相邻元素对做旋转：
    stack((-x[..., 1::2], x[..., ::2]), -1).flatten(-2)，且cos/sin已覆盖整个head（旋转模块用
    repeat_interleave(freqs, 2, -1)生成，Cohere与BLT的写法）。建议对每个张量调用
    torch_npu.npu_rotary_mul(x, cos, sin, rotary_mode='interleave')，直接使用模型自己的表。
原因
    eager写法每个张量需要两次跨步取数、一次取负、stack、flatten、两次乘法和一次加法，有的模型
    还要先转float32再转回；融合内核只读一次x。算子文档中interleave模式的公式对任意宽度为D的表
    都恰好等于这个表达式，因此不必重建cos/sin表。
示例
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    turned = torch.stack((-q[..., 1::2], q[..., ::2]), dim=-1).flatten(-2)
    return q * c + turned * s
替代写法
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    return torch_npu.npu_rotary_mul(q, c, s, rotary_mode='interleave')
修复安全性
    需要前置条件。A2/A3上interleave模式的文档只允许cos/sin在batch与head上完全广播（x为BNSD时
    为11SD，BSND时为1S1D）；HF的表由position_ids生成，带batch维，文档未列出这种形状。表只能以
    batch为1传入，这仅在batch中每一行位置相同时才正确。D为偶数且小于896、B*N小于1000由检查项
    确认。模型在float32中计算再转回时，融合内核按激活dtype自行舍入（在bfloat16容差之内）。切勿
    映射到half模式或npu_apply_rotary_pos_emb：配对方式不同。
参考
    catalog/rope/npu_rotary_mul.toml（interleave公式与r1/r2形状）；pitfalls.md 4.2、4.3。
""",
}


def search(q, k, cos, sin):
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    q_turned = torch.stack((-q[..., 1::2], q[..., ::2]), dim=-1).flatten(-2)
    k_turned = torch.stack((-k[..., 1::2], k[..., ::2]), dim=-1).flatten(-2)
    return q * c + q_turned * s, k * c + k_turned * s


def search_float_compute(q, k, cos, sin):
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    qf = q.float()
    kf = k.float()
    q_turned = torch.stack([-qf[..., 1::2], qf[..., 0::2]], dim=-1).flatten(-2)
    k_turned = torch.stack([-kf[..., 1::2], kf[..., 0::2]], dim=-1).flatten(-2)
    return (qf * c + q_turned * s).to(dtype=q.dtype), (kf * c + k_turned * s).to(dtype=k.dtype)


def lookalike_reverse_turn(q, k, cos, sin):
    # stack(x_odd, -x_even): the inverse rotation of every pair
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    q_turned = torch.stack((q[..., 1::2], -q[..., ::2]), dim=-1).flatten(-2)
    k_turned = torch.stack((k[..., 1::2], -k[..., ::2]), dim=-1).flatten(-2)
    return q * c + q_turned * s, k * c + k_turned * s


def replace(q, k, cos, sin):
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    return (torch_npu.npu_rotary_mul(q, c, s, rotary_mode="interleave"),
            torch_npu.npu_rotary_mul(k, c, s, rotary_mode="interleave"))


def naive_half_mode(q, k, cos, sin):
    c = cos.unsqueeze(1)
    s = sin.unsqueeze(1)
    return torch_npu.npu_rotary_mul(q, c, s), torch_npu.npu_rotary_mul(k, c, s)
