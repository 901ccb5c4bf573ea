"""DeepSeek-V3-style MLA + MoE transformer, written like a standalone inference script.

* Multi-head latent attention with two interchangeable cores selected by
  `attn_impl`: "naive" expands the latent into per-head K/V and caches them;
  "absorb" caches the normalised latent and the shared rope key, folds W_UK into
  the query and applies W_UV after attention.
* Interleaved RoPE through complex numbers (torch.polar / view_as_complex),
  with YaRN frequency correction when the context is extended.
* Sigmoid gate with e_score_correction_bias, group-limited top-k, renormalised
  and scaled weights, routed experts w2(silu(w1 x) * w3 x) plus shared experts.
* The first `n_dense_layers` blocks use a dense MLP.
* Static cache buffers indexed by start_pos.
"""
import math
from dataclasses import dataclass
from typing import Literal, Optional, Tuple

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

world_size = 1
rank = 0
block_size = 128


@dataclass
class ModelArgs:
    max_batch_size: int = 8
    max_seq_len: int = 16384
    vocab_size: int = 129280
    dim: int = 7168
    inter_dim: int = 18432
    moe_inter_dim: int = 2048
    n_layers: int = 61
    n_dense_layers: int = 3
    n_heads: int = 128
    n_routed_experts: int = 256
    n_shared_experts: int = 1
    n_activated_experts: int = 8
    n_expert_groups: int = 8
    n_limited_groups: int = 4
    score_func: Literal["softmax", "sigmoid"] = "sigmoid"
    norm_topk_prob: bool = True
    route_scale: float = 2.5
    q_lora_rank: int = 1536
    kv_lora_rank: int = 512
    qk_nope_head_dim: int = 128
    qk_rope_head_dim: int = 64
    v_head_dim: int = 128
    rms_norm_eps: float = 1e-6
    original_seq_len: int = 4096
    rope_theta: float = 10000.0
    rope_factor: float = 40.0
    beta_fast: int = 32
    beta_slow: int = 1
    mscale: float = 1.0
    attn_impl: Literal["naive", "absorb"] = "absorb"


def parse_config(cfg: dict) -> ModelArgs:
    """Map HuggingFace config.json names onto ModelArgs."""
    rope = cfg.get("rope_scaling") or {}
    args = ModelArgs(
        max_batch_size=cfg.get("max_batch_size", 8),
        max_seq_len=cfg.get("max_position_embeddings", 16384),
        vocab_size=cfg["vocab_size"],
        dim=cfg["hidden_size"],
        inter_dim=cfg["intermediate_size"],
        moe_inter_dim=cfg["moe_intermediate_size"],
        n_layers=cfg["num_hidden_layers"],
        n_dense_layers=cfg["first_k_dense_replace"],
        n_heads=cfg["num_attention_heads"],
        n_routed_experts=cfg["n_routed_experts"],
        n_shared_experts=cfg["n_shared_experts"],
        n_activated_experts=cfg["num_experts_per_tok"],
        n_expert_groups=cfg["n_group"],
        n_limited_groups=cfg["topk_group"],
        score_func=cfg.get("scoring_func", "sigmoid"),
        norm_topk_prob=cfg.get("norm_topk_prob", True),
        route_scale=cfg["routed_scaling_factor"],
        q_lora_rank=cfg.get("q_lora_rank") or 0,
        kv_lora_rank=cfg["kv_lora_rank"],
        qk_nope_head_dim=cfg["qk_nope_head_dim"],
        qk_rope_head_dim=cfg["qk_rope_head_dim"],
        v_head_dim=cfg["v_head_dim"],
        rms_norm_eps=cfg.get("rms_norm_eps", 1e-6),
        original_seq_len=rope.get("original_max_position_embeddings", cfg.get("max_position_embeddings", 4096)),
        rope_theta=cfg.get("rope_theta", 10000.0),
        rope_factor=rope.get("factor", 1.0),
        beta_fast=rope.get("beta_fast", 32),
        beta_slow=rope.get("beta_slow", 1),
        mscale=rope.get("mscale_all_dim", 1.0),
        attn_impl=cfg.get("attn_impl", "absorb"),
    )
    if args.n_routed_experts % args.n_expert_groups:
        raise ValueError("n_routed_experts must divide into n_group groups")
    return args


def weight_dequant(weight: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Block-wise dequantisation of a 1-byte weight: one scale per 128x128 tile."""
    out_f, in_f = weight.shape
    tiles = weight.float().view(out_f // block_size, block_size, in_f // block_size, block_size)
    return (tiles * scale[:, None, :, None]).view(out_f, in_f).to(torch.get_default_dtype())


def linear(x: torch.Tensor, weight: torch.Tensor, bias=None, scale=None) -> torch.Tensor:
    if weight.element_size() > 1:
        return F.linear(x, weight, bias)
    # Quantised checkpoint: dequantise on the fly (a fused kernel would do this in the GEMM).
    return F.linear(x, weight_dequant(weight, scale), bias)


class Linear(nn.Module):
    def __init__(self, in_features: int, out_features: int, bias: bool = False, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = nn.Parameter(torch.randn(out_features, in_features, dtype=dtype) * in_features ** -0.5)
        if self.weight.element_size() == 1:
            tiles = ((out_features + block_size - 1) // block_size, (in_features + block_size - 1) // block_size)
            self.scale = nn.Parameter(torch.ones(*tiles, dtype=torch.float32))
        else:
            self.register_parameter("scale", None)
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None

    def forward(self, x):
        return linear(x, self.weight, self.bias, self.scale)


class ColumnParallelLinear(Linear):
    def __init__(self, in_features: int, out_features: int, bias: bool = False, dtype=None):
        assert out_features % world_size == 0
        super().__init__(in_features, out_features // world_size, bias, dtype)


class RowParallelLinear(Linear):
    def __init__(self, in_features: int, out_features: int, bias: bool = False, dtype=None):
        assert in_features % world_size == 0
        super().__init__(in_features // world_size, out_features, bias, dtype)

    def forward(self, x):
        y = linear(x, self.weight, None, self.scale)
        if world_size > 1:
            dist.all_reduce(y)
        if self.bias is not None:
            y = y + self.bias
        return y


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor):
        if hasattr(F, "rms_norm"):
            return F.rms_norm(x, (self.dim,), self.weight, self.eps)
        x32 = x.float()
        y = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * self.weight).type_as(x)


def yarn_correction_range(args: ModelArgs, dim: int) -> Tuple[int, int]:
    """Frequency indices between which YaRN blends interpolated and original frequencies."""
    def dim_for_rotations(rotations: float) -> float:
        return dim * math.log(args.original_seq_len / (rotations * 2 * math.pi)) / (2 * math.log(args.rope_theta))

    low = math.floor(dim_for_rotations(args.beta_fast))
    high = math.ceil(dim_for_rotations(args.beta_slow))
    return max(low, 0), min(high, dim - 1)


def precompute_freqs_cis(args: ModelArgs) -> torch.Tensor:
    dim = args.qk_rope_head_dim
    freqs = 1.0 / (args.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    if args.max_seq_len > args.original_seq_len:
        low, high = yarn_correction_range(args, dim)
        span = max(high - low, 1e-3)
        ramp = ((torch.arange(dim // 2, dtype=torch.float32) - low) / span).clamp(0, 1)
        keep = 1 - ramp
        freqs = freqs / args.rope_factor * (1 - keep) + freqs * keep
    angles = torch.outer(torch.arange(args.max_seq_len, dtype=torch.float32), freqs)
    return torch.polar(torch.ones_like(angles), angles)  # complex64 [max_seq_len, dim/2]


def apply_rotary_emb(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    """x: [bsz, seq, heads, rope_dim]; adjacent pairs (2i, 2i+1) are one complex number."""
    dtype = x.dtype
    pairs = torch.view_as_complex(x.float().view(*x.shape[:-1], -1, 2))
    rotated = pairs * freqs_cis.view(1, pairs.size(1), 1, pairs.size(-1))
    return torch.view_as_real(rotated).flatten(3).to(dtype)


class MLA(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.n_local_heads = args.n_heads // world_size
        self.q_lora_rank = args.q_lora_rank
        self.kv_lora_rank = args.kv_lora_rank
        self.qk_nope_head_dim = args.qk_nope_head_dim
        self.qk_rope_head_dim = args.qk_rope_head_dim
        self.qk_head_dim = args.qk_nope_head_dim + args.qk_rope_head_dim
        self.v_head_dim = args.v_head_dim
        self.attn_impl = args.attn_impl

        if self.q_lora_rank == 0:
            self.q_proj = ColumnParallelLinear(args.dim, args.n_heads * self.qk_head_dim)
        else:
            self.q_a_proj = Linear(args.dim, self.q_lora_rank)
            self.q_a_layernorm = RMSNorm(self.q_lora_rank, args.rms_norm_eps)
            self.q_b_proj = ColumnParallelLinear(self.q_lora_rank, args.n_heads * self.qk_head_dim)
        self.kv_a_proj_with_mqa = Linear(args.dim, self.kv_lora_rank + self.qk_rope_head_dim)
        self.kv_a_layernorm = RMSNorm(self.kv_lora_rank, args.rms_norm_eps)
        self.kv_b_proj = ColumnParallelLinear(self.kv_lora_rank, args.n_heads * (self.qk_nope_head_dim + self.v_head_dim))
        self.o_proj = RowParallelLinear(args.n_heads * self.v_head_dim, args.dim)

        self.softmax_scale = self.qk_head_dim ** -0.5
        if args.max_seq_len > args.original_seq_len:
            yarn_mscale = 0.1 * args.mscale * math.log(args.rope_factor) + 1.0
            self.softmax_scale = self.softmax_scale * yarn_mscale * yarn_mscale

        b, s = args.max_batch_size, args.max_seq_len
        if self.attn_impl == "naive":
            self.register_buffer("k_cache", torch.zeros(b, s, self.n_local_heads, self.qk_head_dim), persistent=False)
            self.register_buffer("v_cache", torch.zeros(b, s, self.n_local_heads, self.v_head_dim), persistent=False)
        else:
            self.register_buffer("kv_cache", torch.zeros(b, s, self.kv_lora_rank), persistent=False)
            self.register_buffer("pe_cache", torch.zeros(b, s, self.qk_rope_head_dim), persistent=False)

    def forward(self, x: torch.Tensor, start_pos: int, freqs_cis: torch.Tensor, mask: Optional[torch.Tensor]):
        bsz, seqlen, _ = x.size()
        end_pos = start_pos + seqlen
        if self.q_lora_rank == 0:
            q = self.q_proj(x)
        else:
            q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))
        q = q.view(bsz, seqlen, self.n_local_heads, self.qk_head_dim)
        q_nope, q_pe = torch.split(q, [self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)

        compressed = self.kv_a_proj_with_mqa(x)
        kv, k_pe = torch.split(compressed, [self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis)  # one rope key shared by all heads

        if self.attn_impl == "naive":
            q = torch.cat([q_nope, q_pe], dim=-1)
            kv = self.kv_b_proj(self.kv_a_layernorm(kv))
            kv = kv.view(bsz, seqlen, self.n_local_heads, self.qk_nope_head_dim + self.v_head_dim)
            k_nope, v = torch.split(kv, [self.qk_nope_head_dim, self.v_head_dim], dim=-1)
            k = torch.cat([k_nope, k_pe.expand(-1, -1, self.n_local_heads, -1)], dim=-1)
            self.k_cache[:bsz, start_pos:end_pos] = k
            self.v_cache[:bsz, start_pos:end_pos] = v
            scores = torch.einsum("bshd,bthd->bsht", q, self.k_cache[:bsz, :end_pos]) * self.softmax_scale
        else:
            # W_UK folded into the query: q_nope [b,s,h,nope] x W_UK [h,nope,c] -> [b,s,h,c].
            wkv_b = self.kv_b_proj.weight
            if self.kv_b_proj.scale is not None:
                wkv_b = weight_dequant(wkv_b, self.kv_b_proj.scale)
            wkv_b = wkv_b.view(self.n_local_heads, -1, self.kv_lora_rank)
            w_uk = wkv_b[:, : self.qk_nope_head_dim]
            q_latent = torch.einsum("bshd,hdc->bshc", q_nope, w_uk)
            self.kv_cache[:bsz, start_pos:end_pos] = self.kv_a_layernorm(kv)
            self.pe_cache[:bsz, start_pos:end_pos] = k_pe.squeeze(2)
            scores = (
                torch.einsum("bshc,btc->bsht", q_latent, self.kv_cache[:bsz, :end_pos])
                + torch.einsum("bshr,btr->bsht", q_pe, self.pe_cache[:bsz, :end_pos])
            ) * self.softmax_scale

        if mask is not None:
            scores = scores + mask.unsqueeze(1)
        scores = scores.softmax(dim=-1, dtype=torch.float32).type_as(x)

        if self.attn_impl == "naive":
            out = torch.einsum("bsht,bthd->bshd", scores, self.v_cache[:bsz, :end_pos])
        else:
            out_latent = torch.einsum("bsht,btc->bshc", scores, self.kv_cache[:bsz, :end_pos])
            w_uv = wkv_b[:, -self.v_head_dim :]
            out = torch.einsum("bshc,hdc->bshd", out_latent, w_uv)
        return self.o_proj(out.flatten(2))


class MLP(nn.Module):
    """Dense SwiGLU feed-forward, sharded column/row across tensor-parallel ranks."""

    def __init__(self, dim: int, inter_dim: int):
        super().__init__()
        self.w1 = ColumnParallelLinear(dim, inter_dim)
        self.w2 = RowParallelLinear(inter_dim, dim)
        self.w3 = ColumnParallelLinear(dim, inter_dim)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Expert(nn.Module):
    def __init__(self, dim: int, inter_dim: int):
        super().__init__()
        self.w1 = Linear(dim, inter_dim)
        self.w2 = Linear(inter_dim, dim)
        self.w3 = Linear(dim, inter_dim)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Gate(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.topk = args.n_activated_experts
        self.n_groups = args.n_expert_groups
        self.topk_groups = args.n_limited_groups
        self.score_func = args.score_func
        self.norm_topk_prob = args.norm_topk_prob
        self.route_scale = args.route_scale
        self.weight = nn.Parameter(torch.randn(args.n_routed_experts, args.dim) * args.dim ** -0.5)
        # The correction bias only steers which experts are picked, never the mixing weights.
        self.e_score_correction_bias = nn.Parameter(torch.randn(args.n_routed_experts) * 0.1)

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        logits = F.linear(x.float(), self.weight.float())
        if self.score_func == "softmax":
            scores = logits.softmax(dim=-1)
        else:
            scores = logits.sigmoid()
        choice_scores = scores + self.e_score_correction_bias.float()

        if self.n_groups > 1:
            grouped = choice_scores.view(x.size(0), self.n_groups, -1)
            group_strength = grouped.topk(2, dim=-1).values.sum(dim=-1)  # best two experts per group
            kept_groups = group_strength.topk(self.topk_groups, dim=-1).indices
            keep = torch.zeros_like(group_strength, dtype=torch.bool).scatter_(1, kept_groups, True)
            grouped = grouped.masked_fill(~keep.unsqueeze(-1), float("-inf"))
            choice_scores = grouped.flatten(1)

        topk_idx = torch.topk(choice_scores, self.topk, dim=-1, sorted=False).indices
        topk_weight = scores.gather(1, topk_idx)
        if self.norm_topk_prob and self.topk > 1:
            topk_weight = topk_weight / (topk_weight.sum(dim=-1, keepdim=True) + 1e-20)
        topk_weight = topk_weight * self.route_scale
        return topk_weight.type_as(x), topk_idx


class MoE(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.dim = args.dim
        self.n_routed_experts = args.n_routed_experts
        self.n_local_experts = args.n_routed_experts // world_size
        self.experts_start_idx = rank * self.n_local_experts
        self.experts_end_idx = self.experts_start_idx + self.n_local_experts
        self.gate = Gate(args)
        self.experts = nn.ModuleList(
            [
                Expert(args.dim, args.moe_inter_dim)
                if self.experts_start_idx <= i < self.experts_end_idx
                else None
                for i in range(self.n_routed_experts)
            ]
        )
        self.shared_experts = MLP(args.dim, args.n_shared_experts * args.moe_inter_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.size()
        x = x.view(-1, self.dim)
        weights, indices = self.gate(x)
        y = torch.zeros_like(x)
        counts = torch.bincount(indices.flatten(), minlength=self.n_routed_experts).tolist()
        for i in range(self.experts_start_idx, self.experts_end_idx):
            if counts[i] == 0:
                continue
            rows, slot = torch.where(indices == i)
            y[rows] += self.experts[i](x[rows]) * weights[rows, slot, None]
        z = self.shared_experts(x)
        if world_size > 1:
            dist.all_reduce(y)
        return (y + z).view(shape)


class Block(nn.Module):
    def __init__(self, layer_id: int, args: ModelArgs):
        super().__init__()
        self.attn = MLA(args)
        self.ffn = MLP(args.dim, args.inter_dim) if layer_id < args.n_dense_layers else MoE(args)
        self.attn_norm = RMSNorm(args.dim, args.rms_norm_eps)
        self.ffn_norm = RMSNorm(args.dim, args.rms_norm_eps)

    def forward(self, x, start_pos: int, freqs_cis, mask):
        x = x + self.attn(self.attn_norm(x), start_pos, freqs_cis, mask)
        x = x + self.ffn(self.ffn_norm(x))
        return x


class Transformer(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.args = args
        self.embed = nn.Embedding(args.vocab_size, args.dim)
        self.layers = nn.ModuleList([Block(layer_id, args) for layer_id in range(args.n_layers)])
        self.norm = RMSNorm(args.dim, args.rms_norm_eps)
        self.head = ColumnParallelLinear(args.dim, args.vocab_size)
        self.register_buffer("freqs_cis", precompute_freqs_cis(args), persistent=False)

    @torch.inference_mode()
    def forward(self, tokens: torch.Tensor, start_pos: int = 0) -> torch.Tensor:
        seqlen = tokens.size(1)
        h = self.embed(tokens)
        freqs_cis = self.freqs_cis[start_pos : start_pos + seqlen]
        mask = None
        if seqlen > 1:
            mask = torch.full((seqlen, start_pos + seqlen), float("-inf"), device=tokens.device).triu_(start_pos + 1)
        for layer in self.layers:
            h = layer(h, start_pos, freqs_cis, mask)
        logits = self.head(self.norm(h))
        if world_size > 1:
            shards = [torch.empty_like(logits) for _ in range(world_size)]
            dist.all_gather(shards, logits)
            logits = torch.cat(shards, dim=-1)
        return logits


VARIANTS = [{"attn_impl": "naive"}, {"attn_impl": "absorb"}]
VARIANTS_AGREE = True  # absorbing W_UK/W_UV must not change the result


def from_config(values: dict) -> Transformer:
    return Transformer(parse_config(values))


def full_logits(model: Transformer, tokens: torch.Tensor) -> torch.Tensor:
    return model(tokens, 0)


def incremental_logits(model: Transformer, tokens: torch.Tensor, prompt_len: int) -> torch.Tensor:
    rows = [model(tokens[:, :prompt_len], 0)[:, -1]]
    for pos in range(prompt_len, tokens.size(1)):
        rows.append(model(tokens[:, pos : pos + 1], pos)[:, -1])
    return torch.stack(rows, dim=1)
