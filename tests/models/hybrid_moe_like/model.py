# coding=utf-8
"""A hybrid decoder: dense and mixture-of-experts layers, full and sliding-window attention.

This file is written in the manner of a real model release rather than as a
minimal example: a configuration dataclass with validation, several norm and
MLP classes, a router with two scoring functions, a static key/value cache,
mask helpers, weight initialisation, a loss helper used only in training and
a small greedy generation loop. It exists so that analysis speed can be
measured on a file of realistic size (about 30 KB) and so that one file holds
many of the chains a port has to look at:

  * RMSNorm in two spellings (cast before the weight, and the weight applied in
    float32), QK-norm on the heads, residual adds followed by norms;
  * RoPE on the first ``partial_rotary_factor`` share of each head, half-split
    (``rotate_half``) convention, cos/sin computed once per forward;
  * grouped-query attention with ``repeat_kv``, causal masking, and a sliding
    window on the layers that ``layer_types`` marks ``"sliding_attention"``;
  * a static cache preallocated at ``max_cache_len`` and written in place with
    ``index_copy_`` at the new positions;
  * dense layers with a merged ``gate_up_proj`` (one GEMM, then ``chunk``);
  * sparse layers with a linear router (softmax top-k, or sigmoid scores plus a
    selection bias and group-limited top-k), experts as a ``ModuleList`` of
    SwiGLU MLPs with separate projections, and a shared expert whose output is
    scaled by a sigmoid gate.

Shapes in comments: B batch, S new tokens, L cached length, H hidden size,
N query heads, K key/value heads, D head size, E experts.
"""
import math
from dataclasses import dataclass, field, fields
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

# The runner also checks the other router and the model without QK-norm.
VARIANTS = [{}, {"router_scoring": "sigmoid", "n_group": 2, "topk_group": 1}, {"use_qk_norm": False}]


@dataclass
class HybridConfig:
    vocab_size: int = 152064
    hidden_size: int = 4096
    intermediate_size: int = 12288
    moe_intermediate_size: int = 1408
    num_hidden_layers: int = 40
    num_attention_heads: int = 32
    num_key_value_heads: int = 4
    head_dim: int = 128
    partial_rotary_factor: float = 0.5
    use_qk_norm: bool = True
    attention_bias: bool = False
    attention_dropout: float = 0.0
    layer_types: List[str] = field(default_factory=list)
    sliding_window: int = 4096
    first_k_dense_replace: int = 2
    num_experts: int = 64
    num_experts_per_tok: int = 6
    n_shared_experts: int = 1
    router_scoring: str = "softmax"
    n_group: int = 1
    topk_group: int = 1
    norm_topk_prob: bool = True
    routed_scaling_factor: float = 1.0
    router_aux_loss_coef: float = 0.001
    rms_norm_eps: float = 1e-6
    rope_theta: float = 1000000.0
    max_position_embeddings: int = 32768
    max_cache_len: int = 4096
    initializer_range: float = 0.02
    tie_word_embeddings: bool = False
    torch_dtype: str = "bfloat16"

    def __post_init__(self):
        if not self.layer_types:
            # Every fourth layer sees the whole context; the others a window.
            self.layer_types = [
                "full_attention" if (i + 1) % 4 == 0 else "sliding_attention" for i in range(self.num_hidden_layers)
            ]

    @property
    def rotary_dim(self) -> int:
        return int(self.head_dim * self.partial_rotary_factor)

    @property
    def num_key_value_groups(self) -> int:
        return self.num_attention_heads // self.num_key_value_heads


def parse_config(values: dict) -> HybridConfig:
    accepted = {f.name for f in fields(HybridConfig)}
    cfg = HybridConfig(**{k: v for k, v in values.items() if k in accepted})
    problems = []
    if cfg.num_attention_heads % cfg.num_key_value_heads != 0:
        problems.append("num_attention_heads must be a multiple of num_key_value_heads")
    if cfg.rotary_dim % 2 != 0:
        problems.append("the rotated part of each head must have an even size")
    if len(cfg.layer_types) != cfg.num_hidden_layers:
        problems.append("layer_types needs one entry per layer")
    if cfg.router_scoring not in ("softmax", "sigmoid"):
        problems.append(f"unknown router_scoring {cfg.router_scoring!r}")
    if cfg.num_experts % cfg.n_group != 0:
        problems.append("num_experts must split evenly into n_group groups")
    if cfg.num_experts_per_tok > cfg.num_experts:
        problems.append("num_experts_per_tok exceeds num_experts")
    if problems:
        raise ValueError("; ".join(problems))
    return cfg


# ---------------------------------------------------------------------------
# Normalisation
# ---------------------------------------------------------------------------


class HybridRMSNorm(nn.Module):
    """Root-mean-square norm; statistics in float32, gain applied after the cast back."""

    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)

    def extra_repr(self) -> str:
        return f"{tuple(self.weight.shape)}, eps={self.variance_epsilon}"


class HybridHeadNorm(nn.Module):
    """Per-head RMS norm for queries and keys; the gain is applied in float32."""

    def __init__(self, head_dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(head_dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return (normed * self.weight.float()).to(x.dtype)


# ---------------------------------------------------------------------------
# Rotary position embedding (partial, half-split)
# ---------------------------------------------------------------------------


class HybridRotaryEmbedding(nn.Module):
    def __init__(self, config: HybridConfig):
        super().__init__()
        dim = config.rotary_dim
        inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.attention_scaling = 1.0

    @torch.no_grad()
    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        # [B, S] positions -> [B, S, rotary_dim] tables in the activation dtype.
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        position_ids_expanded = position_ids[:, None, :].float()
        device_type = x.device.type if isinstance(x.device.type, str) else "cpu"
        with torch.autocast(device_type=device_type, enabled=False):  # the tables are computed in float32
            freqs = (inv_freq_expanded @ position_ids_expanded).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos = emb.cos() * self.attention_scaling
            sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_partial_rotary(q, k, cos, sin, unsqueeze_dim: int = 1):
    """Rotates the first cos.shape[-1] channels of each head and keeps the rest as they are."""
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    rotary_dim = cos.shape[-1]
    q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
    k_rot, k_pass = k[..., :rotary_dim], k[..., rotary_dim:]
    q_embed = (q_rot * cos) + (rotate_half(q_rot) * sin)
    k_embed = (k_rot * cos) + (rotate_half(k_rot) * sin)
    return torch.cat([q_embed, q_pass], dim=-1), torch.cat([k_embed, k_pass], dim=-1)


# ---------------------------------------------------------------------------
# Key/value cache
# ---------------------------------------------------------------------------


class StaticLayerCache:
    """One layer's keys and values, preallocated at max_cache_len and written in place.

    Keys and values are kept as [B, K, max_cache_len, D]; ``update`` writes the
    new positions with ``index_copy_`` and returns the filled prefix, so the
    attention below never sees the unwritten tail.
    """

    def __init__(self, batch_size: int, num_kv_heads: int, max_cache_len: int, head_dim: int, dtype):
        shape = (batch_size, num_kv_heads, max_cache_len, head_dim)
        self.keys = torch.zeros(shape, dtype=dtype)
        self.values = torch.zeros(shape, dtype=dtype)
        self.seen_tokens = 0

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, cache_position: torch.Tensor):
        self.keys.index_copy_(2, cache_position, key_states)
        self.values.index_copy_(2, cache_position, value_states)
        self.seen_tokens = int(cache_position[-1]) + 1
        return self.keys[:, :, : self.seen_tokens], self.values[:, :, : self.seen_tokens]


class HybridCache:
    """The caches of every layer, plus the bookkeeping the model needs between steps."""

    def __init__(self, config: HybridConfig, batch_size: int, dtype=torch.float32):
        self.layers = [
            StaticLayerCache(batch_size, config.num_key_value_heads, config.max_cache_len, config.head_dim, dtype)
            for _ in range(config.num_hidden_layers)
        ]

    def get_seq_length(self) -> int:
        return self.layers[0].seen_tokens if self.layers else 0

    def __len__(self) -> int:
        return len(self.layers)


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    """[B, K, L, D] -> [B, K * n_rep, L, D], each key/value head repeated for its query group."""
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


# ---------------------------------------------------------------------------
# Attention
# ---------------------------------------------------------------------------


def build_attention_mask(q_len: int, kv_len: int, window: Optional[int], dtype: torch.dtype) -> torch.Tensor:
    """Additive [1, 1, S, L] mask: causal, and limited to the last `window` keys when a window is given."""
    q_pos = torch.arange(kv_len - q_len, kv_len)[:, None]
    k_pos = torch.arange(kv_len)[None, :]
    allowed = k_pos <= q_pos
    if window is not None:
        allowed = allowed & (k_pos > q_pos - window)
    mask = torch.zeros(q_len, kv_len, dtype=dtype)
    mask = mask.masked_fill(~allowed, torch.finfo(dtype).min)
    return mask[None, None, :, :]


def eager_attention_forward(module, query, key, value, attention_mask, scaling: float, dropout: float = 0.0):
    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)

    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value_states)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


class HybridAttention(nn.Module):
    """Grouped-query attention; full or sliding-window by layer, optional QK-norm."""

    def __init__(self, config: HybridConfig, layer_idx: int):
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        self.head_dim = config.head_dim
        self.num_heads = config.num_attention_heads
        self.num_key_value_heads = config.num_key_value_heads
        self.num_key_value_groups = config.num_attention_heads // config.num_key_value_heads
        self.scaling = self.head_dim**-0.5
        self.attention_dropout = config.attention_dropout
        self.is_sliding = config.layer_types[layer_idx] == "sliding_attention"
        self.sliding_window = config.sliding_window if self.is_sliding else None

        self.q_proj = nn.Linear(config.hidden_size, self.num_heads * self.head_dim, bias=config.attention_bias)
        self.k_proj = nn.Linear(config.hidden_size, self.num_key_value_heads * self.head_dim, bias=config.attention_bias)
        self.v_proj = nn.Linear(config.hidden_size, self.num_key_value_heads * self.head_dim, bias=config.attention_bias)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, config.hidden_size, bias=False)
        if config.use_qk_norm:
            self.q_norm = HybridHeadNorm(self.head_dim, eps=config.rms_norm_eps)
            self.k_norm = HybridHeadNorm(self.head_dim, eps=config.rms_norm_eps)
        else:
            self.q_norm = None
            self.k_norm = None

    def forward(
        self,
        hidden_states: torch.Tensor,
        position_embeddings: Tuple[torch.Tensor, torch.Tensor],
        cache_position: torch.Tensor,
        past_key_value: Optional[StaticLayerCache] = None,
    ):
        bsz, q_len, _ = hidden_states.shape
        hidden_shape = (bsz, q_len, -1, self.head_dim)

        query_states = self.q_proj(hidden_states).view(hidden_shape)
        key_states = self.k_proj(hidden_states).view(hidden_shape)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        if self.q_norm is not None:
            query_states = self.q_norm(query_states)
            key_states = self.k_norm(key_states)
        query_states = query_states.transpose(1, 2)
        key_states = key_states.transpose(1, 2)

        cos, sin = position_embeddings
        query_states, key_states = apply_partial_rotary(query_states, key_states, cos, sin)

        if past_key_value is not None:
            key_states, value_states = past_key_value.update(key_states, value_states, cache_position)

        kv_len = key_states.shape[-2]
        attention_mask = build_attention_mask(q_len, kv_len, self.sliding_window, query_states.dtype)
        attn_output, _ = eager_attention_forward(
            self,
            query_states,
            key_states,
            value_states,
            attention_mask,
            scaling=self.scaling,
            dropout=0.0 if not self.training else self.attention_dropout,
        )
        attn_output = attn_output.reshape(bsz, q_len, -1).contiguous()
        return self.o_proj(attn_output)


# ---------------------------------------------------------------------------
# Feed-forward: dense layers and experts
# ---------------------------------------------------------------------------


class HybridDenseMLP(nn.Module):
    """SwiGLU with the gate and up projections stored as one matrix, gate rows first."""

    def __init__(self, config: HybridConfig):
        super().__init__()
        self.gate_up_proj = nn.Linear(config.hidden_size, 2 * config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)
        self.activation_fn = nn.SiLU()

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        up_states = self.gate_up_proj(hidden_states)
        gate, up_states = up_states.chunk(2, dim=-1)
        up_states = up_states * self.activation_fn(gate)
        return self.down_proj(up_states)


class HybridExpertMLP(nn.Module):
    """One expert (and the shared expert): SwiGLU with separate projections."""

    def __init__(self, hidden_size: int, intermediate_size: int):
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class HybridRouter(nn.Module):
    """Scores tokens against experts and picks top-k of them.

    ``softmax``: probabilities over all experts, top-k, optional renormalisation.
    ``sigmoid``: independent scores; a learned bias steers the choice only
    (the weights come from the unbiased scores), and the choice is limited to
    the ``topk_group`` best groups of experts.
    """

    def __init__(self, config: HybridConfig):
        super().__init__()
        self.top_k = config.num_experts_per_tok
        self.num_experts = config.num_experts
        self.scoring = config.router_scoring
        self.n_group = config.n_group
        self.topk_group = config.topk_group
        self.norm_topk_prob = config.norm_topk_prob
        self.routed_scaling_factor = config.routed_scaling_factor
        self.weight = nn.Parameter(torch.empty(config.num_experts, config.hidden_size))
        self.register_buffer("e_score_correction_bias", torch.zeros(config.num_experts))

    def softmax_topk(self, logits: torch.Tensor):
        probs = F.softmax(logits, dim=-1, dtype=torch.float32)
        topk_weight, topk_idx = torch.topk(probs, self.top_k, dim=-1)
        if self.norm_topk_prob:
            topk_weight = topk_weight / topk_weight.sum(dim=-1, keepdim=True)
        return topk_weight, topk_idx

    def sigmoid_group_topk(self, logits: torch.Tensor):
        scores = logits.sigmoid()
        scores_for_choice = scores + self.e_score_correction_bias.unsqueeze(0)
        group_scores = (
            scores_for_choice.view(-1, self.n_group, self.num_experts // self.n_group).topk(2, dim=-1)[0].sum(dim=-1)
        )
        group_idx = torch.topk(group_scores, k=self.topk_group, dim=-1, sorted=False)[1]
        group_mask = torch.zeros_like(group_scores)
        group_mask.scatter_(1, group_idx, 1)
        score_mask = (
            group_mask.unsqueeze(-1)
            .expand(-1, self.n_group, self.num_experts // self.n_group)
            .reshape(-1, self.num_experts)
        )
        masked = scores_for_choice.masked_fill(~score_mask.bool(), 0.0)
        topk_idx = torch.topk(masked, k=self.top_k, dim=-1, sorted=False)[1]
        topk_weight = scores.gather(1, topk_idx)
        if self.norm_topk_prob:
            topk_weight = topk_weight / (topk_weight.sum(dim=-1, keepdim=True) + 1e-20)
        return topk_weight * self.routed_scaling_factor, topk_idx

    def forward(self, tokens: torch.Tensor):
        logits = F.linear(tokens.type(torch.float32), self.weight.type(torch.float32))
        if self.scoring == "sigmoid":
            topk_weight, topk_idx = self.sigmoid_group_topk(logits)
        else:
            topk_weight, topk_idx = self.softmax_topk(logits)
        return topk_weight, topk_idx, logits


def router_balance_loss(router_logits: torch.Tensor, num_experts: int, top_k: int) -> torch.Tensor:
    """Switch-style auxiliary loss; only the training loop calls it."""
    probs = torch.softmax(router_logits.float(), dim=-1)
    _, chosen = torch.topk(probs, top_k, dim=-1)
    dispatch = F.one_hot(chosen, num_experts).float().sum(dim=1)
    return num_experts * (dispatch.mean(0) * probs.mean(0)).sum() / top_k


class HybridSparseMoeBlock(nn.Module):
    """Routed experts plus a shared expert scaled by its own sigmoid gate."""

    def __init__(self, config: HybridConfig):
        super().__init__()
        self.config = config
        self.num_experts = config.num_experts
        self.top_k = config.num_experts_per_tok
        self.router = HybridRouter(config)
        self.experts = nn.ModuleList(
            [HybridExpertMLP(config.hidden_size, config.moe_intermediate_size) for _ in range(config.num_experts)]
        )
        shared_size = config.moe_intermediate_size * max(config.n_shared_experts, 1)
        self.shared_expert = HybridExpertMLP(config.hidden_size, shared_size)
        self.shared_expert_gate = nn.Linear(config.hidden_size, 1, bias=False)
        self.aux_loss: Optional[torch.Tensor] = None

    def route_tokens(self, tokens: torch.Tensor, topk_weight: torch.Tensor, topk_idx: torch.Tensor) -> torch.Tensor:
        final = torch.zeros_like(tokens)
        # expert_mask[e, k, t] = 1 when token t chose expert e as its k-th pick.
        expert_mask = F.one_hot(topk_idx, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in range(self.num_experts):
            slot, token_idx = torch.where(expert_mask[expert_idx])
            if token_idx.numel() == 0:
                continue
            current = tokens[token_idx]
            weighted = self.experts[expert_idx](current) * topk_weight[token_idx, slot, None]
            final.index_add_(0, token_idx, weighted.to(tokens.dtype))
        return final

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        bsz, seq_len, hidden_dim = hidden_states.shape
        tokens = hidden_states.view(-1, hidden_dim)
        topk_weight, topk_idx, router_logits = self.router(tokens)
        topk_weight = topk_weight.to(tokens.dtype)
        if self.training:
            self.aux_loss = router_balance_loss(router_logits, self.num_experts, self.top_k)

        routed = self.route_tokens(tokens, topk_weight, topk_idx)
        shared = self.shared_expert(tokens)
        shared = torch.sigmoid(self.shared_expert_gate(tokens)) * shared
        return (routed + shared).view(bsz, seq_len, hidden_dim)


# ---------------------------------------------------------------------------
# Decoder
# ---------------------------------------------------------------------------


class HybridDecoderLayer(nn.Module):
    def __init__(self, config: HybridConfig, layer_idx: int):
        super().__init__()
        self.hidden_size = config.hidden_size
        self.layer_idx = layer_idx
        self.self_attn = HybridAttention(config, layer_idx)
        if layer_idx >= config.first_k_dense_replace and config.num_experts > 0:
            self.mlp = HybridSparseMoeBlock(config)
        else:
            self.mlp = HybridDenseMLP(config)
        self.input_layernorm = HybridRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = HybridRMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(
        self,
        hidden_states: torch.Tensor,
        position_embeddings: Tuple[torch.Tensor, torch.Tensor],
        cache_position: torch.Tensor,
        past_key_value: Optional[StaticLayerCache] = None,
    ) -> torch.Tensor:
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(
            hidden_states,
            position_embeddings=position_embeddings,
            cache_position=cache_position,
            past_key_value=past_key_value,
        )
        hidden_states = residual + hidden_states

        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = residual + hidden_states
        return hidden_states


class HybridPreTrainedModel(nn.Module):
    """Weight initialisation shared by the model classes."""

    config: HybridConfig

    def init_weights(self):
        std = self.config.initializer_range
        for module in self.modules():
            if isinstance(module, nn.Linear):
                module.weight.data.normal_(mean=0.0, std=std)
                if module.bias is not None:
                    module.bias.data.zero_()
            elif isinstance(module, nn.Embedding):
                module.weight.data.normal_(mean=0.0, std=std)
            elif isinstance(module, (HybridRMSNorm, HybridHeadNorm)):
                module.weight.data.fill_(1.0)
            elif isinstance(module, HybridRouter):
                module.weight.data.normal_(mean=0.0, std=std)
                module.e_score_correction_bias.zero_()

    def num_parameters(self, only_trainable: bool = False) -> int:
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not only_trainable)


class HybridModel(HybridPreTrainedModel):
    def __init__(self, config: HybridConfig):
        super().__init__()
        self.config = config
        self.padding_idx = None
        self.vocab_size = config.vocab_size
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([HybridDecoderLayer(config, i) for i in range(config.num_hidden_layers)])
        self.norm = HybridRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.rotary_emb = HybridRotaryEmbedding(config)

    def forward(
        self,
        input_ids: torch.Tensor,
        past_key_values: Optional[HybridCache] = None,
        cache_position: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        inputs_embeds = self.embed_tokens(input_ids)
        if cache_position is None:
            past_seen = past_key_values.get_seq_length() if past_key_values is not None else 0
            cache_position = torch.arange(past_seen, past_seen + inputs_embeds.shape[1])
        position_ids = cache_position.unsqueeze(0).expand(inputs_embeds.shape[0], -1)

        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)
        for decoder_layer in self.layers:
            layer_cache = past_key_values.layers[decoder_layer.layer_idx] if past_key_values is not None else None
            hidden_states = decoder_layer(
                hidden_states,
                position_embeddings=position_embeddings,
                cache_position=cache_position,
                past_key_value=layer_cache,
            )
        return self.norm(hidden_states)


class HybridForCausalLM(HybridPreTrainedModel):
    def __init__(self, config: HybridConfig):
        super().__init__()
        self.config = config
        self.model = HybridModel(config)
        self.vocab_size = config.vocab_size
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        self.init_weights()

    def forward(
        self,
        input_ids: torch.Tensor,
        past_key_values: Optional[HybridCache] = None,
        labels: Optional[torch.Tensor] = None,
    ) -> Dict[str, Optional[torch.Tensor]]:
        hidden_states = self.model(input_ids, past_key_values=past_key_values)
        logits = self.lm_head(hidden_states)
        loss = None
        if labels is not None:
            loss = self.loss_function(logits, labels)
        return {"logits": logits, "loss": loss}

    def loss_function(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        # Next-token loss: position t predicts token t + 1; padding is -100.
        shift_logits = logits[:, :-1, :].contiguous().float()
        shift_labels = labels[:, 1:].contiguous()
        loss = F.cross_entropy(shift_logits.view(-1, self.vocab_size), shift_labels.view(-1), ignore_index=-100)
        aux = [
            layer.mlp.aux_loss
            for layer in self.model.layers
            if isinstance(layer.mlp, HybridSparseMoeBlock) and layer.mlp.aux_loss is not None
        ]
        if aux:
            loss = loss + self.config.router_aux_loss_coef * torch.stack(aux).sum()
        return loss

    def new_cache(self, batch_size: int) -> HybridCache:
        dtype = self.lm_head.weight.dtype
        return HybridCache(self.config, batch_size, dtype)

    @torch.no_grad()
    def generate(self, input_ids: torch.Tensor, max_new_tokens: int = 16) -> torch.Tensor:
        """Greedy decoding through the static cache (a small helper for demos)."""
        cache = self.new_cache(input_ids.shape[0])
        logits = self(input_ids, past_key_values=cache)["logits"]
        tokens = [input_ids]
        next_token = logits[:, -1:].argmax(dim=-1)
        for _ in range(max_new_tokens):
            tokens.append(next_token)
            if cache.get_seq_length() >= self.config.max_cache_len:
                break
            logits = self(next_token, past_key_values=cache)["logits"]
            next_token = logits[:, -1:].argmax(dim=-1)
        return torch.cat(tokens, dim=1)


def from_config(values: dict) -> HybridForCausalLM:
    return HybridForCausalLM(parse_config(values))


@torch.no_grad()
def full_logits(model: HybridForCausalLM, input_ids: torch.Tensor) -> torch.Tensor:
    return model(input_ids)["logits"]


@torch.no_grad()
def incremental_logits(model: HybridForCausalLM, input_ids: torch.Tensor, prompt_len: int) -> torch.Tensor:
    cache = model.new_cache(input_ids.shape[0])
    logits = model(input_ids[:, :prompt_len], past_key_values=cache)["logits"]
    steps = [logits[:, -1]]
    for t in range(prompt_len, input_ids.shape[1]):
        logits = model(input_ids[:, t : t + 1], past_key_values=cache)["logits"]
        steps.append(logits[:, -1])
    return torch.stack(steps, dim=1)
