"""DeepSeek-V3.2-style model: MLA over a latent cache, steered by a lightning indexer.

The indexer has its own query/key projections (wq_b on the query latent, wk on
the hidden state), a LayerNorm on its key, RoPE on the first qk_rope_head_dim
channels, and a per-head weight projection. Its score for a (query, key) pair
is sum_h w_h * relu(q_h . k). The index_topk best keys per query form a mask,
and the MLA core (absorbed form, latent cache) attends only to those keys.

RoPE modes differ on purpose: the MLA rope channels rotate adjacent pairs
(interleaved, via complex numbers), the indexer rotates the two halves of its
rope channels (non-interleaved, "rotate half" form).

The MoE uses a sort-based dispatch (argsort of expert ids, per-expert slices).
"""
from dataclasses import dataclass, fields
from typing import Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class DeepseekV32LikeConfig:
    vocab_size: int = 129280
    hidden_size: int = 7168
    intermediate_size: int = 18432
    moe_intermediate_size: int = 2048
    num_hidden_layers: int = 61
    first_k_dense_replace: int = 3
    num_attention_heads: int = 128
    q_lora_rank: int = 1536
    qk_rope_head_dim: int = 64  # rotated slice of each query/key head
    qk_nope_head_dim: int = 128
    v_head_dim: int = 128
    kv_lora_rank: int = 512  # width of the compressed KV latent
    n_routed_experts: int = 256
    n_shared_experts: int = 1
    num_experts_per_tok: int = 8
    n_group: int = 8
    topk_group: int = 4
    routed_scaling_factor: float = 2.5
    norm_topk_prob: bool = True
    index_n_heads: int = 64
    index_head_dim: int = 128
    index_topk: int = 2048
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    max_position_embeddings: int = 163840
    max_batch_size: int = 8
    torch_dtype: str = "bfloat16"


def parse_config(values: dict) -> DeepseekV32LikeConfig:
    known = {f.name for f in fields(DeepseekV32LikeConfig)}
    config = DeepseekV32LikeConfig(**{k: v for k, v in values.items() if k in known})
    if config.index_head_dim <= config.qk_rope_head_dim:
        raise ValueError("index_head_dim must exceed qk_rope_head_dim")
    return config


class DeepseekRMSNorm(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size))

    def forward(self, x):
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


def precompute_freqs_cis(rope_dim: int, max_len: int, theta: float) -> torch.Tensor:
    inv_freq = 1.0 / (theta ** (torch.arange(0, rope_dim, 2, dtype=torch.float32) / rope_dim))
    angles = torch.outer(torch.arange(max_len, dtype=torch.float32), inv_freq)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    """Interleaved rotation of x [bsz, seq, heads, d]: channels (2i, 2i+1) form a complex number."""
    as_complex = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    out = torch.view_as_real(as_complex * freqs_cis[None, :, None, :]).flatten(3)
    return out.type_as(x)


def apply_rotary_emb_half(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    """Non-interleaved rotation: channel i pairs with channel i + d/2 (used by the indexer)."""
    cos = torch.cat([freqs_cis.real, freqs_cis.real], dim=-1)[None, :, None, :]
    sin = torch.cat([freqs_cis.imag, freqs_cis.imag], dim=-1)[None, :, None, :]
    x1, x2 = x.float().chunk(2, dim=-1)
    rotated = torch.cat([-x2, x1], dim=-1)
    return (x.float() * cos + rotated * sin).type_as(x)


class Indexer(nn.Module):
    def __init__(self, config: DeepseekV32LikeConfig):
        super().__init__()
        self.n_heads = config.index_n_heads
        self.head_dim = config.index_head_dim
        self.rope_head_dim = config.qk_rope_head_dim
        self.index_topk = config.index_topk
        self.wq_b = nn.Linear(config.q_lora_rank, self.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(config.hidden_size, self.head_dim, bias=False)
        self.k_norm = nn.LayerNorm(self.head_dim)
        self.weights_proj = nn.Linear(config.hidden_size, self.n_heads, bias=False)
        self.softmax_scale = self.head_dim ** -0.5
        self.register_buffer(
            "k_cache", torch.zeros(config.max_batch_size, config.max_position_embeddings, self.head_dim),
            persistent=False,
        )

    def forward(self, x, qr, start_pos: int, freqs_cis, mask: Optional[torch.Tensor]) -> torch.Tensor:
        bsz, seqlen, _ = x.shape
        end_pos = start_pos + seqlen
        q = self.wq_b(qr).view(bsz, seqlen, self.n_heads, self.head_dim)
        q_pe, q_nope = torch.split(q, [self.rope_head_dim, self.head_dim - self.rope_head_dim], dim=-1)
        q = torch.cat([apply_rotary_emb_half(q_pe, freqs_cis), q_nope], dim=-1)

        k = self.k_norm(self.wk(x))
        k_pe, k_nope = torch.split(k, [self.rope_head_dim, self.head_dim - self.rope_head_dim], dim=-1)
        k_pe = apply_rotary_emb_half(k_pe.unsqueeze(2), freqs_cis).squeeze(2)
        k = torch.cat([k_pe, k_nope], dim=-1)
        self.k_cache[:bsz, start_pos:end_pos] = k

        head_weights = self.weights_proj(x) * (self.n_heads ** -0.5) * self.softmax_scale  # [b, s, h]
        logits = torch.einsum("bshd,btd->bsht", q, self.k_cache[:bsz, :end_pos])
        index_scores = (F.relu(logits) * head_weights.unsqueeze(-1)).sum(dim=2)  # [b, s, t]
        if mask is not None:
            index_scores = index_scores + mask
        return index_scores.topk(min(self.index_topk, end_pos), dim=-1).indices


class SparseMLA(nn.Module):
    def __init__(self, config: DeepseekV32LikeConfig):
        super().__init__()
        self.num_heads, self.kv_lora_rank = config.num_attention_heads, config.kv_lora_rank
        self.qk_rope_head_dim = config.qk_rope_head_dim
        self.qk_nope_head_dim = config.qk_nope_head_dim
        self.v_head_dim = config.v_head_dim
        # one query head = a position-free slice followed by a rotated slice
        self.q_head_dim = config.qk_nope_head_dim + config.qk_rope_head_dim
        self.scale = self.q_head_dim ** -0.5

        self.q_a_proj = nn.Linear(config.hidden_size, config.q_lora_rank, bias=False)
        self.q_a_layernorm = DeepseekRMSNorm(config.q_lora_rank, config.rms_norm_eps)
        self.q_b_proj = nn.Linear(config.q_lora_rank, self.num_heads * self.q_head_dim, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(config.hidden_size, self.kv_lora_rank + self.qk_rope_head_dim, bias=False)
        self.kv_a_layernorm = DeepseekRMSNorm(self.kv_lora_rank, config.rms_norm_eps)
        self.kv_b_proj = nn.Linear(self.kv_lora_rank, self.num_heads * (self.qk_nope_head_dim + self.v_head_dim), bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.v_head_dim, config.hidden_size, bias=False)
        self.indexer = Indexer(config)

        b, s = config.max_batch_size, config.max_position_embeddings
        self.register_buffer("kv_cache", torch.zeros(b, s, self.kv_lora_rank), persistent=False)
        self.register_buffer("pe_cache", torch.zeros(b, s, self.qk_rope_head_dim), persistent=False)

    def forward(self, x, start_pos: int, freqs_cis, mask: Optional[torch.Tensor]):
        bsz, seqlen, _ = x.shape
        end_pos = start_pos + seqlen
        qr = self.q_a_layernorm(self.q_a_proj(x))  # the query latent also feeds the indexer
        q = self.q_b_proj(qr).view(bsz, seqlen, self.num_heads, self.q_head_dim)
        q_nope, q_pe = q.split([self.qk_nope_head_dim, self.qk_rope_head_dim], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)

        latent, k_pe = self.kv_a_proj_with_mqa(x).split([self.kv_lora_rank, self.qk_rope_head_dim], dim=-1)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis).squeeze(2)
        self.kv_cache[:bsz, start_pos:end_pos] = self.kv_a_layernorm(latent)
        self.pe_cache[:bsz, start_pos:end_pos] = k_pe

        w_kv = self.kv_b_proj.weight.view(self.num_heads, self.qk_nope_head_dim + self.v_head_dim, self.kv_lora_rank)
        w_uk, w_uv = w_kv[:, : self.qk_nope_head_dim], w_kv[:, self.qk_nope_head_dim :]
        q_latent = torch.einsum("bshd,hdc->bshc", q_nope, w_uk)
        scores = torch.einsum("bshc,btc->bsht", q_latent, self.kv_cache[:bsz, :end_pos])
        scores = scores + torch.einsum("bshr,btr->bsht", q_pe, self.pe_cache[:bsz, :end_pos])
        scores = scores * self.scale

        # Sparse selection: only the indexer's top-k keys survive for each query.
        topk_indices = self.indexer(x, qr, start_pos, freqs_cis, mask)
        index_mask = torch.full((bsz, seqlen, end_pos), float("-inf"), device=x.device)
        index_mask = index_mask.scatter_(-1, topk_indices, 0.0)
        if mask is not None:
            index_mask = index_mask + mask
        scores = scores + index_mask.unsqueeze(2)

        probs = scores.softmax(dim=-1, dtype=torch.float32).type_as(x)
        out = torch.einsum("bsht,btc->bshc", probs, self.kv_cache[:bsz, :end_pos])
        out = torch.einsum("bshc,hdc->bshd", out, w_uv)
        return self.o_proj(out.reshape(bsz, seqlen, -1))


class DeepseekMLP(nn.Module):
    def __init__(self, hidden_size: int, intermediate_size: int):
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class MoEGate(nn.Module):
    def __init__(self, config: DeepseekV32LikeConfig):
        super().__init__()
        self.top_k = config.num_experts_per_tok
        self.n_routed_experts = config.n_routed_experts
        self.n_group = config.n_group
        self.topk_group = config.topk_group
        self.routed_scaling_factor = config.routed_scaling_factor
        self.norm_topk_prob = config.norm_topk_prob
        self.weight = nn.Parameter(torch.randn(config.n_routed_experts, config.hidden_size) * 0.1)
        self.e_score_correction_bias = nn.Parameter(torch.linspace(-0.05, 0.05, config.n_routed_experts))

    def forward(self, hidden_states: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        tokens = hidden_states.view(-1, hidden_states.shape[-1])
        logits = F.linear(tokens.type(torch.float32), self.weight.type(torch.float32))
        scores = logits.sigmoid()

        biased = scores + self.e_score_correction_bias.unsqueeze(0)
        per_group = biased.view(tokens.shape[0], self.n_group, -1)
        group_scores = per_group.topk(2, dim=-1)[0].sum(dim=-1)
        group_idx = torch.topk(group_scores, k=self.topk_group, dim=-1, sorted=False)[1]
        group_mask = torch.zeros_like(group_scores).scatter_(1, group_idx, 1)
        score_mask = group_mask.unsqueeze(-1).expand_as(per_group).reshape(tokens.shape[0], -1)
        biased = biased.masked_fill(~score_mask.bool(), 0.0)
        _, topk_idx = torch.topk(biased, k=self.top_k, dim=-1, sorted=False)
        topk_weight = scores.gather(1, topk_idx)
        if self.top_k > 1 and self.norm_topk_prob:
            topk_weight = topk_weight / (topk_weight.sum(dim=-1, keepdim=True) + 1e-20)
        return topk_idx, topk_weight * self.routed_scaling_factor


class DeepseekMoE(nn.Module):
    def __init__(self, config: DeepseekV32LikeConfig):
        super().__init__()
        self.gate = MoEGate(config)
        self.experts = nn.ModuleList(
            [DeepseekMLP(config.hidden_size, config.moe_intermediate_size) for _ in range(config.n_routed_experts)]
        )
        self.shared_experts = DeepseekMLP(config.hidden_size, config.moe_intermediate_size * config.n_shared_experts)

    def forward(self, hidden_states):
        topk_idx, topk_weight = self.gate(hidden_states)
        token_rows = hidden_states.reshape(-1, hidden_states.shape[-1])
        routed = self.moe_infer(token_rows, topk_idx, topk_weight)
        # shared experts run on the unrouted input and are added back at full shape
        routed = routed.reshape(hidden_states.shape)
        return routed + self.shared_experts(hidden_states)

    @torch.no_grad()
    def moe_infer(self, x, topk_ids, topk_weight):
        # Sort the (token, slot) pairs by expert so each expert sees one contiguous slice.
        counts = torch.bincount(topk_ids.view(-1), minlength=len(self.experts)).tolist()
        order = topk_ids.view(-1).argsort()
        sorted_tokens = x[order // topk_ids.shape[1]]
        outputs = []
        begin = 0
        for expert_id, n in enumerate(counts):
            if n == 0:
                continue
            outputs.append(self.experts[expert_id](sorted_tokens[begin : begin + n]))
            begin += n
        stacked = torch.cat(outputs, dim=0) if outputs else sorted_tokens.new_empty(0)
        unsorted = torch.empty_like(stacked)
        unsorted[order] = stacked
        weighted = unsorted.view(*topk_ids.shape, -1).type(topk_weight.dtype) * topk_weight.unsqueeze(-1)
        return weighted.sum(dim=1).type(x.dtype)


class DecoderLayer(nn.Module):
    def __init__(self, config: DeepseekV32LikeConfig, layer_idx: int):
        super().__init__()
        self.self_attn = SparseMLA(config)
        if layer_idx >= config.first_k_dense_replace:
            self.mlp = DeepseekMoE(config)
        else:
            self.mlp = DeepseekMLP(config.hidden_size, config.intermediate_size)
        self.input_layernorm = DeepseekRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_layernorm = DeepseekRMSNorm(config.hidden_size, config.rms_norm_eps)

    def forward(self, x, start_pos, freqs_cis, mask):
        x = x + self.self_attn(self.input_layernorm(x), start_pos, freqs_cis, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class DeepseekV32ForCausalLM(nn.Module):
    def __init__(self, config: DeepseekV32LikeConfig):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([DecoderLayer(config, i) for i in range(config.num_hidden_layers)])
        self.norm = DeepseekRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        freqs = precompute_freqs_cis(config.qk_rope_head_dim, config.max_position_embeddings, config.rope_theta)
        self.register_buffer("freqs_cis", freqs, persistent=False)

    @torch.no_grad()
    def forward(self, input_ids: torch.Tensor, start_pos: int = 0) -> torch.Tensor:
        seqlen = input_ids.shape[1]
        freqs_cis = self.freqs_cis[start_pos : start_pos + seqlen]
        mask = None
        if seqlen > 1:  # prefill; a decode step may see every cached key
            mask = torch.full((seqlen, start_pos + seqlen), float("-inf")).triu_(start_pos + 1)
        h = self.embed_tokens(input_ids)
        for layer in self.layers:
            h = layer(h, start_pos, freqs_cis, mask)
        return self.lm_head(self.norm(h))


def from_config(values: dict) -> DeepseekV32ForCausalLM:
    return DeepseekV32ForCausalLM(parse_config(values))


def full_logits(model, input_ids):
    return model(input_ids, start_pos=0)


def incremental_logits(model, input_ids, prompt_len):
    steps = [model(input_ids[:, :prompt_len], start_pos=0)[:, -1]]
    for pos in range(prompt_len, input_ids.shape[1]):
        steps.append(model(input_ids[:, pos : pos + 1], start_pos=pos)[:, -1])
    return torch.stack(steps, dim=1)
