"""Llama-family decoder in the HuggingFace coding style.

Grouped-query attention with half-rotation ("rotate_half") RoPE, a growing
key/value cache object, an attention dispatch table, and a SwiGLU MLP with
separate gate/up/down projections.
"""
import math
from dataclasses import dataclass, fields
from typing import Callable, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class LlamaLikeConfig:
    vocab_size: int = 32000
    hidden_size: int = 4096
    intermediate_size: int = 11008
    num_hidden_layers: int = 32
    num_attention_heads: int = 32
    num_key_value_heads: int = 8
    head_dim: Optional[int] = None
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    max_position_embeddings: int = 4096
    attention_bias: bool = False
    attention_dropout: float = 0.0
    attn_implementation: str = "eager"
    tie_word_embeddings: bool = False
    torch_dtype: str = "bfloat16"


def parse_config(values: dict) -> LlamaLikeConfig:
    known = {f.name for f in fields(LlamaLikeConfig)}
    config = LlamaLikeConfig(**{k: v for k, v in values.items() if k in known})
    if config.head_dim is None:
        config.head_dim = config.hidden_size // config.num_attention_heads
    if config.num_attention_heads % config.num_key_value_heads != 0:
        raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")
    return config


class LlamaRMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.variance_epsilon = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        x32 = hidden_states.to(torch.float32)
        inv_rms = torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        # Normalise in float32, cast back, then apply the learned per-channel gain.
        scaled = (x32 * inv_rms).to(hidden_states.dtype)
        return self.weight * scaled


class LlamaRotaryEmbedding(nn.Module):
    """Produces cos/sin tables for the positions of the current step."""

    def __init__(self, config: LlamaLikeConfig):
        super().__init__()
        dim = config.head_dim
        exponents = torch.arange(0, dim, 2, dtype=torch.int64).float() / dim
        inv_freq = 1.0 / (config.rope_theta ** exponents)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x: torch.Tensor, position_ids: torch.Tensor):
        # Outer product of positions and inverse frequencies: [bsz, seq, dim/2].
        angles = position_ids.float().unsqueeze(-1) * self.inv_freq.float().view(1, 1, -1)
        table = torch.cat([angles, angles], dim=-1)
        return table.cos().to(x.dtype), table.sin().to(x.dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    # Swap the two halves of the last axis, negating the one that moves to the front.
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim: int = 1):
    # The tables arrive as [bsz, seq, dim]; a head axis lets them broadcast
    # over q and k, which are laid out as [bsz, heads, seq, dim].
    cos_h, sin_h = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    rotated_q = q * cos_h + rotate_half(q) * sin_h
    rotated_k = k * cos_h + rotate_half(k) * sin_h
    return rotated_q, rotated_k


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    """[bsz, kv_heads, seq, dim] -> [bsz, kv_heads * n_rep, seq, dim]."""
    if n_rep == 1:
        return hidden_states
    bsz, kv_heads, seq, dim = hidden_states.shape
    tiled = hidden_states.unsqueeze(2).expand(bsz, kv_heads, n_rep, seq, dim)
    return tiled.reshape(bsz, kv_heads * n_rep, seq, dim)


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
    groups = module.num_key_value_groups
    keys, values = repeat_kv(key, groups), repeat_kv(value, groups)
    # Scaled scores, [bsz, heads, q_len, kv_len].
    scores = torch.matmul(query, keys.transpose(-2, -1)) * scaling
    if attention_mask is not None:
        scores = scores + attention_mask[..., : keys.shape[-2]]
    # Softmax in float32 for stability, then back to the activation dtype.
    probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    probs = F.dropout(probs, p=dropout, training=module.training)
    context = torch.matmul(probs, values)
    # Back to [bsz, seq, heads, dim] for the output projection.
    return context.transpose(1, 2).contiguous(), probs


def sdpa_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
    # Torch builds without the fused kernel fall back to the equivalent eager computation.
    if not hasattr(F, "scaled_dot_product_attention"):
        return eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout)
    groups = module.num_key_value_groups
    keys, values = repeat_kv(key, groups), repeat_kv(value, groups)
    if attention_mask is not None:
        attention_mask = attention_mask[..., : keys.shape[-2]]
    context = F.scaled_dot_product_attention(
        query, keys, values, attn_mask=attention_mask, scale=scaling, dropout_p=dropout if module.training else 0.0
    )
    return context.transpose(1, 2).contiguous(), None


ATTENTION_FUNCTIONS: Dict[str, Callable] = {
    "eager": eager_attention_forward,
    "sdpa": sdpa_attention_forward,
}


class DynamicKVCache:
    """Per-layer key/value tensors that grow along the sequence axis."""

    def __init__(self):
        self.key_cache: List[torch.Tensor] = []
        self.value_cache: List[torch.Tensor] = []

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int):
        if len(self.key_cache) <= layer_idx:
            self.key_cache.append(key_states)
            self.value_cache.append(value_states)
        else:
            self.key_cache[layer_idx] = torch.cat([self.key_cache[layer_idx], key_states], dim=-2)
            self.value_cache[layer_idx] = torch.cat([self.value_cache[layer_idx], value_states], dim=-2)
        return self.key_cache[layer_idx], self.value_cache[layer_idx]

    def get_seq_length(self, layer_idx: int = 0) -> int:
        if len(self.key_cache) <= layer_idx:
            return 0
        return self.key_cache[layer_idx].shape[-2]


class LlamaAttention(nn.Module):
    """Grouped-query self-attention with rotary positions and an optional growing cache."""
    def __init__(self, config: LlamaLikeConfig, layer_idx: int):
        super().__init__()
        self.config, self.layer_idx = config, layer_idx
        self.head_dim = config.head_dim
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = config.attention_dropout
        self.num_key_value_groups = config.num_attention_heads // config.num_key_value_heads  # query heads per kv head

        self.q_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim, bias=config.attention_bias)
        self.k_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim, bias=config.attention_bias)
        self.v_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim, bias=config.attention_bias)
        self.o_proj = nn.Linear(config.num_attention_heads * self.head_dim, config.hidden_size, bias=config.attention_bias)

    def forward(self, hidden_states: torch.Tensor, position_embeddings: Tuple[torch.Tensor, torch.Tensor],
                attention_mask: Optional[torch.Tensor], past_key_value: Optional[DynamicKVCache] = None):
        """Attend over this step's tokens and, through the cache, over all earlier ones.

        hidden_states is [bsz, seq, hidden]; position_embeddings is the (cos, sin) pair from
        the rotary module; past_key_value, when given, grows by this step's keys and values.
        """
        batch, seq_len = hidden_states.shape[0], hidden_states.shape[1]
        # Each projection: [bsz, seq, heads * dim] -> [bsz, heads, seq, dim].
        q = self.q_proj(hidden_states).reshape(batch, seq_len, -1, self.head_dim).permute(0, 2, 1, 3)
        k = self.k_proj(hidden_states).reshape(batch, seq_len, -1, self.head_dim).permute(0, 2, 1, 3)
        v = self.v_proj(hidden_states).reshape(batch, seq_len, -1, self.head_dim).permute(0, 2, 1, 3)

        # Rotate queries and keys by their absolute positions.
        cos, sin = position_embeddings
        q, k = apply_rotary_pos_emb(q, k, cos, sin)

        if past_key_value is not None:
            k, v = past_key_value.update(k, v, self.layer_idx)

        attend = ATTENTION_FUNCTIONS[self.config.attn_implementation]
        # Both table entries take [bsz, heads, seq, dim] inputs and return
        # [bsz, seq, heads, dim], plus the probabilities when the eager path
        # ran (the fused kernel does not expose them).
        context, probs = attend(
            self, q, k, v, attention_mask,
            scaling=self.scaling,
            # Dropout on the probabilities regularises training only.
            dropout=0.0 if not self.training else self.attention_dropout,
        )
        # Merge the heads again and project back to the model width.
        merged = context.reshape(batch, seq_len, -1).contiguous()
        return self.o_proj(merged), probs


class LlamaMLP(nn.Module):
    def __init__(self, config: LlamaLikeConfig):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config: LlamaLikeConfig, layer_idx: int):
        super().__init__()
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.self_attn = LlamaAttention(config, layer_idx)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.mlp = LlamaMLP(config)

    def forward(self, hidden_states, position_embeddings, attention_mask=None, past_key_value=None):
        """Pre-norm residual block.

        The attention half adds attn(norm(x)) to x; the feed-forward half then adds
        mlp(norm(.)) to that sum. Both norms are RMSNorm.
        """
        normed_in = self.input_layernorm(hidden_states)
        attn_out, _ = self.self_attn(
            normed_in, position_embeddings, attention_mask=attention_mask, past_key_value=past_key_value
        )
        after_attn = hidden_states + attn_out

        # The feed-forward half reads the attention output through its own norm.
        normed = self.post_attention_layernorm(after_attn)
        mlp_out = self.mlp(normed)
        return after_attn + mlp_out


def build_causal_mask(q_len: int, past_len: int, dtype: torch.dtype, device) -> Optional[torch.Tensor]:
    """Additive [1, 1, q_len, past_len + q_len] mask; a single new token sees everything."""
    if q_len == 1:
        return None
    kv_len = past_len + q_len
    query_pos = torch.arange(past_len, kv_len, device=device)[:, None]
    key_pos = torch.arange(kv_len, device=device)[None, :]
    mask = torch.zeros(q_len, kv_len, dtype=dtype, device=device)
    mask = mask.masked_fill(key_pos > query_pos, torch.finfo(dtype).min)
    return mask[None, None, :, :]


class LlamaModel(nn.Module):
    def __init__(self, config: LlamaLikeConfig):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(
            [LlamaDecoderLayer(config, layer_idx) for layer_idx in range(config.num_hidden_layers)]
        )
        self.norm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.rotary_emb = LlamaRotaryEmbedding(config)

    def forward(self, input_ids, past_key_values: Optional[DynamicKVCache] = None, use_cache: bool = False):
        inputs_embeds = self.embed_tokens(input_ids)
        if use_cache and past_key_values is None:
            past_key_values = DynamicKVCache()

        past_seen_tokens = past_key_values.get_seq_length() if past_key_values is not None else 0
        seq_len = inputs_embeds.shape[1]
        cache_position = torch.arange(past_seen_tokens, past_seen_tokens + seq_len, device=inputs_embeds.device)
        position_ids = cache_position.unsqueeze(0).expand(inputs_embeds.shape[0], -1)

        causal_mask = build_causal_mask(seq_len, past_seen_tokens, inputs_embeds.dtype, inputs_embeds.device)
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids)

        # Every layer shares the rotary tables and the mask; the cache object is
        # threaded through so each layer appends to its own slot.
        for layer in self.layers:
            hidden_states = layer(
                hidden_states, position_embeddings, attention_mask=causal_mask, past_key_value=past_key_values
            )

        # One last RMSNorm before the vocabulary projection.
        return self.norm(hidden_states), past_key_values


class LlamaForCausalLM(nn.Module):
    def __init__(self, config: LlamaLikeConfig):
        super().__init__()
        self.config = config
        self.model = LlamaModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, input_ids, past_key_values=None, use_cache: bool = False):
        hidden_states, past_key_values = self.model(input_ids, past_key_values=past_key_values, use_cache=use_cache)
        logits = self.lm_head(hidden_states)
        return logits, past_key_values


def from_config(values: dict) -> LlamaForCausalLM:
    return LlamaForCausalLM(parse_config(values))


@torch.no_grad()
def full_logits(model: LlamaForCausalLM, input_ids: torch.Tensor) -> torch.Tensor:
    logits, _ = model(input_ids, use_cache=False)
    return logits


@torch.no_grad()
def incremental_logits(model: LlamaForCausalLM, input_ids: torch.Tensor, prompt_len: int) -> torch.Tensor:
    """Prefill the prompt, then feed the remaining tokens one at a time through the cache."""
    logits, cache = model(input_ids[:, :prompt_len], use_cache=True)
    last = [logits[:, -1]]
    for pos in range(prompt_len, input_ids.shape[1]):
        logits, cache = model(input_ids[:, pos : pos + 1], past_key_values=cache, use_cache=True)
        last.append(logits[:, -1])
    return torch.stack(last, dim=1)


if __name__ == "__main__":
    torch.manual_seed(0)
    demo = from_config(
        dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2)
    ).eval()
    tokens = torch.randint(0, 64, (1, 8))
    print(incremental_logits(demo, tokens, 5).shape, math.isfinite(float(full_logits(demo, tokens).sum())))
