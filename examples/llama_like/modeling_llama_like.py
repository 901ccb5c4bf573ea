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
        # [bsz, seq, 1] * [1, 1, dim/2] -> [bsz, seq, dim/2]
        freqs = position_ids[:, :, None].float() * self.inv_freq[None, None, :].float()
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim: int = 1):
    # cos/sin are [bsz, seq, dim]; q/k are [bsz, heads, seq, dim].
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    """[bsz, kv_heads, seq, dim] -> [bsz, kv_heads * n_rep, seq, dim]."""
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)

    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask[:, :, :, : key_states.shape[-2]]

    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = F.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value_states)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


def sdpa_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0):
    # Older torch builds lack the fused kernel; the eager path computes the same thing.
    if not hasattr(F, "scaled_dot_product_attention"):
        return eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout)
    key = repeat_kv(key, module.num_key_value_groups)
    value = repeat_kv(value, module.num_key_value_groups)
    if attention_mask is not None:
        attention_mask = attention_mask[:, :, :, : key.shape[-2]]
    attn_output = F.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, dropout_p=dropout if module.training else 0.0, scale=scaling
    )
    return attn_output.transpose(1, 2).contiguous(), None


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
    def __init__(self, config: LlamaLikeConfig, layer_idx: int):
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        self.head_dim = config.head_dim
        self.num_key_value_groups = config.num_attention_heads // config.num_key_value_heads
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = config.attention_dropout

        self.q_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim, bias=config.attention_bias)
        self.k_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim, bias=config.attention_bias)
        self.v_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim, bias=config.attention_bias)
        self.o_proj = nn.Linear(config.num_attention_heads * self.head_dim, config.hidden_size, bias=config.attention_bias)

    def forward(
        self,
        hidden_states: torch.Tensor,
        position_embeddings: Tuple[torch.Tensor, torch.Tensor],
        attention_mask: Optional[torch.Tensor],
        past_key_value: Optional[DynamicKVCache] = None,
    ):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)

        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)

        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)

        if past_key_value is not None:
            key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)

        attention_interface = ATTENTION_FUNCTIONS[self.config.attn_implementation]
        attn_output, attn_weights = attention_interface(
            self,
            query_states,
            key_states,
            value_states,
            attention_mask,
            scaling=self.scaling,
            dropout=0.0 if not self.training else self.attention_dropout,
        )
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        return attn_output, attn_weights


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
        self.self_attn = LlamaAttention(config, layer_idx)
        self.mlp = LlamaMLP(config)
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, hidden_states, position_embeddings, attention_mask=None, past_key_value=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, _ = self.self_attn(
            hidden_states,
            position_embeddings=position_embeddings,
            attention_mask=attention_mask,
            past_key_value=past_key_value,
        )
        hidden_states = residual + hidden_states

        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = residual + hidden_states
        return hidden_states


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

        for decoder_layer in self.layers:
            hidden_states = decoder_layer(
                hidden_states,
                position_embeddings=position_embeddings,
                attention_mask=causal_mask,
                past_key_value=past_key_values,
            )
        hidden_states = self.norm(hidden_states)
        return hidden_states, past_key_values


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
