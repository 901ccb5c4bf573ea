"""MLA's value up-projection applied per head to the latent attention output becomes `npu_transpose_batchmatmul`.

What it does
    Finds the absorbed-MLA step that turns each head's attention output over the
    compressed KV (width `kv_lora_rank`) into that head's value (width `v_head_dim`)
    with the head's slice of `kv_b_proj`: `einsum("bshc,hdc->bshd", o_latent, W_UV)` or
    the same product written with `matmul` and transposes. It proposes one
    `torch_npu.npu_transpose_batchmatmul` with the heads as the batch axis
    (`perm_x1=[1, 0, 2]`, `perm_y=[1, 0, 2]`), reading the tokens-major input and
    writing the tokens-major output directly.
Why
    The einsum lowers to two transposes around a batched matmul; the fused operator
    does the permutes inside the GEMM, so in decode (where this runs every step and the
    token count is tiny) the two extra copies of the head-major tensors disappear.
    This is the V-absorb step of the reference MLA decode chain after
    `npu_mla_prolog_v3` and FIA v2.
Example
    o = torch.einsum("bshc,hdc->bshd", o_latent, wkv_b[:, -self.v_head_dim:])
Use instead
    # at load time: self.w_uv_t = wkv_b[:, -v_head_dim:].transpose(1, 2).contiguous()  # [h, c, d]
    o = torch_npu.npu_transpose_batchmatmul(o_latent.reshape(b * s, h, c), self.w_uv_t,
                                            perm_x1=[1, 0, 2], perm_y=[1, 0, 2]).reshape(b, s, h, d)
Fix safety
    Needs prerequisites: the per-head value weight is transposed to `[h, kv_lora_rank,
    v_head_dim]` once at load time (mechanical). The operator needs `kv_lora_rank` and
    `v_head_dim` to be multiples of 16 and `kv_lora_rank * heads < 65536` (per TP rank);
    the checks evaluate them. Both layouts are exact reorderings, so the numbers only
    differ by summation order.
References
    catalog/matmul/npu_transpose_batchmatmul.toml; reference_chains.md
    (module-attention-mla-absorb, decode: V absorb).
"""
import torch

try:
    import torch_npu
except ImportError:  # no Ascend stack: python/npufuse_ref/standin.py provides a CPU stand-in
    torch_npu = None

RULE = {
    "id": "mla.v_absorb_transpose_bmm",
    "title": "einsum('bshc,hdc->bshd', o_latent, W_UV) -> npu_transpose_batchmatmul (heads as batch)",
    "module": "mla",
    "apis": ["npu_transpose_batchmatmul"],
    "stages": ["decode"],
    "safety": "needs_prerequisites",
    "prerequisites": [
        {"id": "pretranspose_w_uv",
         "en": "Keep the value part of kv_b_proj per head transposed to [heads, kv_lora_rank, v_head_dim], built once at load time.",
         "zh": "在加载时把kv_b_proj中按头划分的value部分转置为[头数, kv_lora_rank, v_head_dim]并保存。",
         "mechanical": True},
    ],
    "checks": ["npu_transpose_batchmatmul:*"],
    "facts": {"mla": True},
    "hints": {"class_names": ["MLA", "DeepseekV3Attention", "MultiHeadLatentAttention"]},
    "inputs": {
        "o_latent": {"shape": ["B", "S", "N", "C"], "dtype": "act"},
        "w_uv": {"shape": ["N", "D", "C"], "dtype": "act", "scale": 0.2},
    },
    "sizes": {"B": 2, "S": 1, "N": 4, "C": 64, "D": 32},
    "dtypes": ["float32", "bfloat16"],
    "match": {"lookalikes": {"lookalike_shared_weight": {
        "near_miss": "fixtures/v_absorb_transpose_bmm_nomatch_shared_weight.py",
        "inputs": {"w_shared": {"shape": ["D", "C"], "dtype": "act", "scale": 0.2}}}}},
    "near_misses": [
        {"file": "fixtures/v_absorb_transpose_bmm_nomatch_shared_weight.py",
         "reason": "one weight is shared by all heads (no head axis on the weight): a plain linear, not a per-head batched matmul"},
    ],
    "doc_zh": """MLA按头把value上投影作用于潜空间注意力输出，替换为npu_transpose_batchmatmul。

功能
    识别吸收式MLA中的一步：用kv_b_proj中每个头的切片，把该头在压缩KV（宽度kv_lora_rank）上的
    注意力输出变换为该头的value（宽度v_head_dim），写法为
    einsum("bshc,hdc->bshd", o_latent, W_UV)，或用matmul加转置写出的同一乘积。建议改为一次
    torch_npu.npu_transpose_batchmatmul，以头为batch维（perm_x1=[1, 0, 2]、perm_y=[1, 0, 2]），
    直接读取token在前的输入并写出token在前的输出。
原因
    einsum会展开为批量矩阵乘两侧的两次转置；融合算子在GEMM内部完成重排，解码时（每步都执行且
    token数很少）省去两次按头重排的拷贝。这是参考MLA解码链中npu_mla_prolog_v3和FIA v2之后的
    V吸收步骤。
示例
    o = torch.einsum("bshc,hdc->bshd", o_latent, wkv_b[:, -self.v_head_dim:])
替代写法
    # 加载时：self.w_uv_t = wkv_b[:, -v_head_dim:].transpose(1, 2).contiguous()  # [h, c, d]
    o = torch_npu.npu_transpose_batchmatmul(o_latent.reshape(b * s, h, c), self.w_uv_t,
                                            perm_x1=[1, 0, 2], perm_y=[1, 0, 2]).reshape(b, s, h, d)
修复安全性
    需要前置改造：按头的value权重在加载时一次性转置为[h, kv_lora_rank, v_head_dim]（可机械
    完成）。算子要求kv_lora_rank和v_head_dim为16的倍数，且kv_lora_rank * 头数 < 65536（按每个
    TP rank计），由检查项评估。两种布局只是重排，数值差异仅来自求和顺序。
参考
    catalog/matmul/npu_transpose_batchmatmul.toml；reference_chains.md
    （module-attention-mla-absorb，解码：V吸收）。
""",
}


def search(o_latent, w_uv):
    return torch.einsum("bshc,hdc->bshd", o_latent, w_uv)


def search_matmul(o_latent, w_uv):
    per_head = torch.matmul(o_latent.transpose(1, 2), w_uv.transpose(1, 2))
    return per_head.transpose(1, 2)


def lookalike_shared_weight(o_latent, w_uv, w_shared=None):
    # one (D, C) weight for every head: a plain linear on the latent
    return torch.einsum("bshc,dc->bshd", o_latent, w_shared)


def replace(o_latent, w_uv):
    b, s, h, c = o_latent.shape
    w_uv_t = w_uv.transpose(1, 2).contiguous()
    out = torch_npu.npu_transpose_batchmatmul(o_latent.reshape(b * s, h, c), w_uv_t, perm_x1=[1, 0, 2],
                                              perm_y=[1, 0, 2])
    return out.reshape(b, s, h, -1)


def naive_untransposed_weight(o_latent, w_uv):
    # Passing W_UV as stored ([h, d, c]) contracts the wrong axis: the operator refuses the shapes.
    b, s, h, c = o_latent.shape
    out = torch_npu.npu_transpose_batchmatmul(o_latent.reshape(b * s, h, c), w_uv, perm_x1=[1, 0, 2],
                                              perm_y=[1, 0, 2])
    return out.reshape(b, s, h, -1)
