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

block_size = 128  # side of the square tiles that share one dequantisation scale
world_size = 1
rank = 0


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
    score_func: Literal["softmax", "sigmoid"] = "sigmoid"
    n_activated_experts: int = 8  # routed experts per token
    n_expert_groups: int = 8
    n_limited_groups: int = 4
    norm_topk_prob: bool = True
    route_scale: float = 2.5
    q_lora_rank: int = 1536
    qk_rope_head_dim: int = 64
    qk_nope_head_dim: int = 128
    v_head_dim: int = 128
    kv_lora_rank: int = 512
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
    if weight.element_size() >= 2:  # bf16/fp32 weights go straight to the GEMM
        return F.linear(x, weight, bias)
    # Quantised checkpoint: dequantise on the fly (a fused kernel would do this in the GEMM).
    return F.linear(x, weight_dequant(weight, scale), bias)


class Linear(nn.Module):
    def __init__(self, in_features: int, out_features: int, bias: bool = False, dtype=None):
        super().__init__()
        # plain attributes for repr(); the weight keeps activations at unit variance
        self.in_features, self.out_features = in_features, out_features
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
        partial = linear(x, self.weight, None, self.scale)
        if world_size > 1:  # each rank holds a slice of the reduced dimension
            dist.all_reduce(partial)
        if self.bias is None:
            return partial
        return partial + self.bias  # added once, after the partial sums are combined


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps
        self.dim = dim

    def forward(self, x: torch.Tensor):
        if hasattr(F, "rms_norm"):  # native kernel on newer torch
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
    in_dtype = x.dtype
    pairs = torch.view_as_complex(x.float().view(*x.shape[:-1], -1, 2))
    rotated = pairs * freqs_cis.view(1, pairs.size(1), 1, pairs.size(-1))
    return torch.view_as_real(rotated).flatten(3).to(in_dtype)


class MLA(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        heads_here = args.n_heads // world_size
        self.n_local_heads = heads_here
        self.q_lora_rank, self.kv_lora_rank = args.q_lora_rank, args.kv_lora_rank
        nope, rope = args.qk_nope_head_dim, args.qk_rope_head_dim
        self.qk_nope_head_dim, self.qk_rope_head_dim = nope, rope
        self.qk_head_dim = nope + rope
        self.v_head_dim = args.v_head_dim
        self.attn_impl = args.attn_impl

        q_width = args.n_heads * self.qk_head_dim
        if self.q_lora_rank:  # low-rank query: down-project, normalise, up-project
            self.q_a_proj = Linear(args.dim, self.q_lora_rank)
            self.q_a_layernorm = RMSNorm(self.q_lora_rank, args.rms_norm_eps)
            self.q_b_proj = ColumnParallelLinear(self.q_lora_rank, q_width)
        else:
            self.q_proj = ColumnParallelLinear(args.dim, q_width)
        # keys and values share one compressed latent plus a single rope key
        self.kv_a_proj_with_mqa = Linear(args.dim, self.kv_lora_rank + rope)
        self.kv_a_layernorm = RMSNorm(self.kv_lora_rank, args.rms_norm_eps)
        self.kv_b_proj = ColumnParallelLinear(self.kv_lora_rank, args.n_heads * (nope + self.v_head_dim))
        self.o_proj = RowParallelLinear(args.n_heads * self.v_head_dim, args.dim)

        yarn_mscale = 0.1 * args.mscale * math.log(args.rope_factor) + 1.0 if args.max_seq_len > args.original_seq_len else 1.0
        self.softmax_scale = self.qk_head_dim ** -0.5 * yarn_mscale ** 2

        b, s = args.max_batch_size, args.max_seq_len
        if self.attn_impl == "naive":
            self.register_buffer("k_cache", torch.zeros(b, s, self.n_local_heads, self.qk_head_dim), persistent=False)
            self.register_buffer("v_cache", torch.zeros(b, s, self.n_local_heads, self.v_head_dim), persistent=False)
        else:
            self.register_buffer("kv_cache", torch.zeros(b, s, self.kv_lora_rank), persistent=False)
            self.register_buffer("pe_cache", torch.zeros(b, s, self.qk_rope_head_dim), persistent=False)

    def forward(self, x: torch.Tensor, start_pos: int, freqs_cis: torch.Tensor, mask: Optional[torch.Tensor] = None):
        b, s = x.shape[0], x.shape[1]
        end_pos = start_pos + s
        if self.q_lora_rank:
            q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))
        else:
            q = self.q_proj(x)
        q = q.reshape(b, s, self.n_local_heads, -1)
        q_pass, q_rot = q.split([self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_rot = apply_rotary_emb(q_rot, freqs_cis)

        compressed = self.kv_a_proj_with_mqa(x)
        latent, k_rot = compressed.split([self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        k_rot = apply_rotary_emb(k_rot.unsqueeze(2), freqs_cis)  # one rope key shared by all heads

        if self.attn_impl == "naive":
            kv = self.kv_b_proj(self.kv_a_layernorm(latent)).reshape(b, s, self.n_local_heads, -1)
            k_pass, v = kv.split([self.qk_nope_head_dim, self.v_head_dim], dim=-1)
            k = torch.cat((k_pass, k_rot.expand(b, s, self.n_local_heads, self.qk_rope_head_dim)), -1)
            # new keys and values land in the cache before scoring, so decode sees them too
            q = torch.cat((q_pass, q_rot), -1)
            self.k_cache[:b, start_pos:end_pos] = k
            self.v_cache[:b, start_pos:end_pos] = v
            scores = torch.einsum("bshd,bthd->bsht", q, self.k_cache[:b, :end_pos]) * self.softmax_scale
        else:
            # W_UK folded into the query: q_nope [b,s,h,nope] x W_UK [h,nope,c] -> [b,s,h,c].
            w_kv_up = self.kv_b_proj.weight
            if self.kv_b_proj.scale is not None:
                w_kv_up = weight_dequant(w_kv_up, self.kv_b_proj.scale)
            w_kv_up = w_kv_up.reshape(self.n_local_heads, -1, self.kv_lora_rank)
            w_uk, w_uv = w_kv_up.split([self.qk_nope_head_dim, self.v_head_dim], dim=1)
            q_latent = torch.einsum("bshd,hdc->bshc", q_pass, w_uk)
            self.kv_cache[:b, start_pos:end_pos] = self.kv_a_layernorm(latent)
            self.pe_cache[:b, start_pos:end_pos] = k_rot.squeeze(2)
            content = torch.einsum("bshc,btc->bsht", q_latent, self.kv_cache[:b, :end_pos])
            # the rope part cannot be absorbed into the latent, so it is scored on its own
            position = torch.einsum("bshr,btr->bsht", q_rot, self.pe_cache[:b, :end_pos])
            scores = (content + position) * self.softmax_scale

        if mask is not None:
            scores = scores + mask[:, None, :]
        probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(x.dtype)

        if self.attn_impl == "naive":
            out = torch.einsum("bsht,bthd->bshd", probs, self.v_cache[:b, :end_pos])
        else:
            # values are read in latent space and lifted to each head afterwards
            out_latent = torch.einsum("bsht,btc->bshc", probs, self.kv_cache[:b, :end_pos])
            out = torch.einsum("bshc,hdc->bshd", out_latent, w_uv)
        return self.o_proj(out.reshape(b, s, -1))


class MLP(nn.Module):
    """Dense SwiGLU feed-forward, sharded column/row across tensor-parallel ranks."""

    def __init__(self, dim: int, inter_dim: int):
        super().__init__()
        self.w1, self.w3 = ColumnParallelLinear(dim, inter_dim), ColumnParallelLinear(dim, inter_dim)  # gate, up
        self.w2 = RowParallelLinear(inter_dim, dim)  # down

    def forward(self, x):
        up = self.w3(x)
        return self.w2(F.silu(self.w1(x)) * up)


class Expert(nn.Module):
    def __init__(self, dim: int, inter_dim: int):
        super().__init__()
        self.w1, self.w3 = Linear(dim, inter_dim), Linear(dim, inter_dim)  # gate, up
        self.w2 = Linear(inter_dim, dim)  # down

    def forward(self, x):
        up = self.w3(x)
        return self.w2(F.silu(self.w1(x)) * up)


class Gate(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.score_func, self.route_scale = args.score_func, args.route_scale
        self.topk = args.n_activated_experts
        self.norm_topk_prob = args.norm_topk_prob
        # experts form groups; only the strongest `topk_groups` groups may be routed to
        self.n_groups = args.n_expert_groups
        self.topk_groups = args.n_limited_groups
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
        self.dim, self.n_routed_experts = args.dim, args.n_routed_experts
        # tensor-parallel ranks own contiguous, equal-sized blocks of routed experts
        per_rank = args.n_routed_experts // world_size
        self.n_local_experts = per_rank
        self.experts_start_idx, self.experts_end_idx = rank * per_rank, (rank + 1) * per_rank
        owned = range(self.experts_start_idx, self.experts_end_idx)
        self.gate = Gate(args)
        # experts of other ranks stay None placeholders so expert indices remain global
        experts = []
        for e in range(self.n_routed_experts):
            experts.append(Expert(args.dim, args.moe_inter_dim) if e in owned else None)
        self.experts = nn.ModuleList(experts)
        # shared experts see every token, whatever the router picked
        shared_width = args.n_shared_experts * args.moe_inter_dim
        self.shared_experts = MLP(args.dim, shared_width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        in_shape = x.shape
        tokens = x.reshape(-1, self.dim)
        routed = torch.zeros_like(tokens)
        route_w, route_idx = self.gate(tokens)
        hits = torch.bincount(route_idx.reshape(-1), minlength=self.n_routed_experts).tolist()
        for e in range(self.experts_start_idx, self.experts_end_idx):
            if not hits[e]:
                continue  # no token chose this expert
            tok, k = torch.where(route_idx == e)
            routed[tok] += self.experts[e](tokens[tok]) * route_w[tok, k].unsqueeze(-1)
        shared = self.shared_experts(tokens)
        if world_size > 1:
            dist.all_reduce(routed)
        return torch.add(routed, shared).reshape(in_shape)


class Block(nn.Module):
    def __init__(self, layer_id: int, args: ModelArgs):
        super().__init__()
        self.attn_norm = RMSNorm(args.dim, args.rms_norm_eps)
        self.attn = MLA(args)
        self.ffn_norm = RMSNorm(args.dim, args.rms_norm_eps)
        dense = layer_id < args.n_dense_layers  # the first layers keep a dense FFN
        self.ffn = MLP(args.dim, args.inter_dim) if dense else MoE(args)

    def forward(self, x, start_pos: int, freqs_cis, mask):
        h = x + self.attn(self.attn_norm(x), start_pos, freqs_cis, mask)
        return h + self.ffn(self.ffn_norm(h))


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
        seqlen = tokens.shape[1]
        freqs_cis = self.freqs_cis[start_pos : start_pos + seqlen]
        h = self.embed(tokens)
        mask = None
        if seqlen > 1:  # a single decoded token may see the whole cache, so it needs no mask
            mask = torch.full((seqlen, start_pos + seqlen), float("-inf"), device=tokens.device).triu_(start_pos + 1)
        for block in self.layers:
            h = block(h, start_pos, freqs_cis, mask)
        logits = self.head(self.norm(h))
        if world_size > 1:  # the vocabulary is column-sharded: gather every rank's slice
            gathered = list(logits.new_empty((world_size, *logits.shape)).unbind(0))
            dist.all_gather(gathered, logits)
            return torch.cat(gathered, dim=-1)
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
