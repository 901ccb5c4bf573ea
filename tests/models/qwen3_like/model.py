"""Qwen3-style dense decoder.

Differences from the Llama fixture, on purpose:
  * per-head RMSNorm on queries and keys (q_norm / k_norm over head_dim) before RoPE;
  * the RMSNorm divides by a square root and casts back after the weight multiply;
  * RoPE is applied by a chunk-based helper instead of rotate_half;
  * GQA groups the queries instead of repeating the keys/values;
  * a preallocated cache written with index_copy_ at the cache positions;
  * optional sliding-window attention on the upper layers.
"""
import math
from dataclasses import dataclass, fields
from typing import List, Optional, Tuple

import torch
from torch import nn
from torch.nn import functional as F


@dataclass
class Qwen3LikeConfig:
    vocab_size: int = 151936
    hidden_size: int = 4096
    intermediate_size: int = 12288
    num_hidden_layers: int = 36
    num_attention_heads: int = 32
    num_key_value_heads: int = 8
    head_dim: int = 128
    rms_norm_eps: float = 1e-6
    rope_theta: float = 1000000.0
    max_position_embeddings: int = 40960
    use_sliding_window: bool = False
    sliding_window: Optional[int] = None
    max_window_layers: int = 36
    attention_bias: bool = False
    tie_word_embeddings: bool = False
    torch_dtype: str = "bfloat16"


def parse_config(values: dict) -> Qwen3LikeConfig:
    names = {f.name for f in fields(Qwen3LikeConfig)}
    cfg = Qwen3LikeConfig(**{key: values[key] for key in values if key in names})
    assert cfg.num_attention_heads % cfg.num_key_value_heads == 0
    assert cfg.head_dim % 2 == 0
    return cfg


class Qwen3RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        orig_dtype = x.dtype
        x = x.float()
        norm = 1.0 / torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)
        return (x * norm * self.weight.float()).to(orig_dtype)


def rope_cos_sin(positions: torch.Tensor, head_dim: int, theta: float, dtype: torch.dtype):
    """cos/sin of shape [seq, head_dim] for absolute positions [seq]."""
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = torch.outer(positions.float(), inv_freq)
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    # x: [bsz, heads, seq, head_dim]; the two halves rotate as (real, imaginary) pairs.
    first, second = x.chunk(2, dim=-1)
    cos_half, sin_half = cos[..., : first.shape[-1]], sin[..., : first.shape[-1]]
    rotated_first = first * cos_half - second * sin_half
    rotated_second = second * cos_half + first * sin_half
    return torch.cat((rotated_first, rotated_second), dim=-1)


class StaticKVCache:
    """Fixed-size [bsz, kv_heads, max_len, head_dim] buffers per layer."""

    def __init__(self, cfg: Qwen3LikeConfig, batch_size: int, max_len: int, dtype=torch.float32):
        shape = (batch_size, cfg.num_key_value_heads, max_len, cfg.head_dim)
        self.keys: List[torch.Tensor] = [torch.zeros(shape, dtype=dtype) for _ in range(cfg.num_hidden_layers)]
        self.values: List[torch.Tensor] = [torch.zeros(shape, dtype=dtype) for _ in range(cfg.num_hidden_layers)]
        self.max_len = max_len
        self.seen_tokens = 0

    def update(self, key_states, value_states, layer_idx: int, cache_position: torch.Tensor):
        k_out = self.keys[layer_idx]
        v_out = self.values[layer_idx]
        k_out.index_copy_(2, cache_position, key_states)
        v_out.index_copy_(2, cache_position, value_states)
        return k_out, v_out


def attention_bias(q_pos: torch.Tensor, kv_len: int, window: Optional[int], dtype) -> torch.Tensor:
    """Additive [q, kv_len] bias: causal, limited to the last `window` keys when given."""
    k_pos = torch.arange(kv_len)
    allowed = k_pos[None, :] <= q_pos[:, None]
    if window is not None:
        allowed = allowed & (k_pos[None, :] > q_pos[:, None] - window)
    bias = torch.zeros(allowed.shape, dtype=dtype)
    return bias.masked_fill(~allowed, float("-inf"))


class Qwen3Attention(nn.Module):
    def __init__(self, cfg: Qwen3LikeConfig, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.n_heads = cfg.num_attention_heads
        self.n_kv_heads = cfg.num_key_value_heads
        self.head_dim = cfg.head_dim
        self.rope_theta = cfg.rope_theta
        use_window = cfg.use_sliding_window and layer_idx >= cfg.max_window_layers
        self.sliding_window = cfg.sliding_window if use_window else None

        self.q_proj = nn.Linear(cfg.hidden_size, self.n_heads * self.head_dim, bias=cfg.attention_bias)
        self.k_proj = nn.Linear(cfg.hidden_size, self.n_kv_heads * self.head_dim, bias=cfg.attention_bias)
        self.v_proj = nn.Linear(cfg.hidden_size, self.n_kv_heads * self.head_dim, bias=cfg.attention_bias)
        self.o_proj = nn.Linear(self.n_heads * self.head_dim, cfg.hidden_size, bias=cfg.attention_bias)
        self.q_norm = Qwen3RMSNorm(self.head_dim, eps=cfg.rms_norm_eps)
        self.k_norm = Qwen3RMSNorm(self.head_dim, eps=cfg.rms_norm_eps)

    def forward(self, x: torch.Tensor, positions: torch.Tensor, cache: Optional[StaticKVCache] = None):
        bsz, q_len, _ = x.shape
        # QK-norm runs on [bsz, seq, heads, head_dim] before the heads move to dim 1.
        q = self.q_norm(self.q_proj(x).view(bsz, q_len, self.n_heads, self.head_dim)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(bsz, q_len, self.n_kv_heads, self.head_dim)).transpose(1, 2)
        v = self.v_proj(x).view(bsz, q_len, self.n_kv_heads, self.head_dim).transpose(1, 2)

        cos, sin = rope_cos_sin(positions, self.head_dim, self.rope_theta, q.dtype)
        q = apply_rope(q, cos, sin)
        k = apply_rope(k, cos, sin)

        if cache is not None:
            k, v = cache.update(k, v, self.layer_idx, positions)
        kv_len = k.shape[2]

        # Grouped queries: [bsz, kv_heads, group, q_len, d] against [bsz, kv_heads, 1, kv_len, d].
        group = self.n_heads // self.n_kv_heads
        q = q.reshape(bsz, self.n_kv_heads, group, q_len, self.head_dim)
        scores = torch.matmul(q, k.unsqueeze(2).transpose(-1, -2)) / math.sqrt(self.head_dim)
        scores = scores + attention_bias(positions, kv_len, self.sliding_window, scores.dtype)
        probs = torch.softmax(scores.float(), dim=-1).type_as(q)
        out = torch.matmul(probs, v.unsqueeze(2))
        out = out.reshape(bsz, self.n_heads, q_len, self.head_dim).transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(out)


class Qwen3MLP(nn.Module):
    def __init__(self, cfg: Qwen3LikeConfig):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x):
        gate = F.silu(self.gate_proj(x))
        up = self.up_proj(x)
        return self.down_proj(gate * up)


class Qwen3DecoderLayer(nn.Module):
    def __init__(self, cfg: Qwen3LikeConfig, layer_idx: int):
        super().__init__()
        self.input_layernorm = Qwen3RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = Qwen3Attention(cfg, layer_idx)
        self.post_attention_layernorm = Qwen3RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = Qwen3MLP(cfg)

    def forward(self, x, positions, cache=None):
        h = x + self.self_attn(self.input_layernorm(x), positions, cache)
        out = h + self.mlp(self.post_attention_layernorm(h))
        return out


class Qwen3ForCausalLM(nn.Module):
    def __init__(self, cfg: Qwen3LikeConfig):
        super().__init__()
        self.config = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList([Qwen3DecoderLayer(cfg, i) for i in range(cfg.num_hidden_layers)])
        self.norm = Qwen3RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.embed_tokens.weight

    def new_cache(self, batch_size: int, max_len: Optional[int] = None) -> StaticKVCache:
        return StaticKVCache(self.config, batch_size, max_len or self.config.max_position_embeddings)

    def forward(self, input_ids: torch.Tensor, cache: Optional[StaticKVCache] = None) -> torch.Tensor:
        start = cache.seen_tokens if cache is not None else 0
        positions = torch.arange(start, start + input_ids.shape[1])
        h = self.embed_tokens(input_ids)
        for layer in self.layers:
            h = layer(h, positions, cache)
        if cache is not None:
            cache.seen_tokens += input_ids.shape[1]
        return self.lm_head(self.norm(h))


def from_config(values: dict) -> Qwen3ForCausalLM:
    return Qwen3ForCausalLM(parse_config(values))


@torch.no_grad()
def full_logits(model: Qwen3ForCausalLM, input_ids: torch.Tensor) -> torch.Tensor:
    return model(input_ids)


@torch.no_grad()
def incremental_logits(model: Qwen3ForCausalLM, input_ids: torch.Tensor, prompt_len: int) -> torch.Tensor:
    cache = model.new_cache(input_ids.shape[0])
    outputs = [model(input_ids[:, :prompt_len], cache)[:, -1]]
    for t in range(prompt_len, input_ids.shape[1]):
        outputs.append(model(input_ids[:, t : t + 1], cache)[:, -1])
    return torch.stack(outputs, dim=1)


if __name__ == "__main__":
    torch.manual_seed(0)
    m = from_config(dict(vocab_size=50, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                         max_position_embeddings=32)).eval()
    ids = torch.randint(0, 50, (1, 7))
    print(incremental_logits(m, ids, 4).shape)
