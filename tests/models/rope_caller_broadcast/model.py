"""Dense decoder whose caller broadcasts the RoPE tables once for every layer.

The decoder stack builds [seq, head_dim] cos/sin tables once for all layers;
each attention gives them their batch and head axes before it calls the
rotation, `cos = cos.unsqueeze(0).unsqueeze(0)`. The rotation helper,
`rope(q, k, cos, sin)`, multiplies by the tables as it gets them: they are
4-D there, and a rewrite of the helper must not add another axis. Other traits: the KV cache is a
preallocated [bsz, kv_heads, max_len, head_dim] buffer per layer written by
slice assignment; GQA by repeat_interleave; the mask is an additive float
bias; the MLP fuses nothing (separate gate and up).
"""
import math
from dataclasses import dataclass, fields
from typing import List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class CallerBroadcastConfig:
    vocab_size: int = 49152
    hidden_size: int = 3072
    intermediate_size: int = 8192
    num_hidden_layers: int = 28
    num_attention_heads: int = 24
    num_key_value_heads: int = 8
    head_dim: int = 128
    rms_norm_eps: float = 1e-6
    rope_theta: float = 500000.0
    max_position_embeddings: int = 8192
    torch_dtype: str = "bfloat16"


def parse_config(values: dict) -> CallerBroadcastConfig:
    names = {f.name for f in fields(CallerBroadcastConfig)}
    return CallerBroadcastConfig(**{key: values[key] for key in values if key in names})


class RMSNorm(nn.Module):
    def __init__(self, width: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, hidden):
        h = hidden.float()
        variance = h.pow(2).mean(dim=-1, keepdim=True)
        h = h * torch.rsqrt(variance + self.eps)
        return self.weight * h.to(hidden.dtype)


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


def rope(q, k, cos, sin):
    # q, k: [bsz, heads, seq, head_dim]; cos/sin arrive already broadcastable to them.
    q_out = (q * cos) + (rotate_half(q) * sin)
    k_out = (k * cos) + (rotate_half(k) * sin)
    return q_out, k_out


class KVBuffer:
    """One preallocated key and value buffer per layer, filled left to right."""

    def __init__(self, cfg: CallerBroadcastConfig, batch: int, max_len: int):
        shape = (batch, cfg.num_key_value_heads, max_len, cfg.head_dim)
        self.k = [torch.zeros(shape) for _ in range(cfg.num_hidden_layers)]
        self.v = [torch.zeros(shape) for _ in range(cfg.num_hidden_layers)]
        self.length = 0

    def write(self, layer: int, k, v, start: int):
        end = start + k.shape[2]
        self.k[layer][:, :, start:end] = k
        self.v[layer][:, :, start:end] = v
        return self.k[layer][:, :, :end], self.v[layer][:, :, :end]


class SelfAttention(nn.Module):
    def __init__(self, cfg: CallerBroadcastConfig, layer: int):
        super().__init__()
        self.layer = layer
        self.n_heads = cfg.num_attention_heads
        self.n_kv = cfg.num_key_value_heads
        self.d = cfg.head_dim
        self.q_proj = nn.Linear(cfg.hidden_size, self.n_heads * self.d, bias=False)
        self.k_proj = nn.Linear(cfg.hidden_size, self.n_kv * self.d, bias=False)
        self.v_proj = nn.Linear(cfg.hidden_size, self.n_kv * self.d, bias=False)
        self.o_proj = nn.Linear(self.n_heads * self.d, cfg.hidden_size, bias=False)

    def forward(self, h, cos, sin, bias, cache: Optional[KVBuffer], start: int):
        b, s, _ = h.shape
        q = self.q_proj(h).view(b, s, self.n_heads, self.d).transpose(1, 2)
        k = self.k_proj(h).view(b, s, self.n_kv, self.d).transpose(1, 2)
        v = self.v_proj(h).view(b, s, self.n_kv, self.d).transpose(1, 2)
        # [seq, head_dim] -> [1, 1, seq, head_dim]
        cos = cos.unsqueeze(0).unsqueeze(0)
        sin = sin.unsqueeze(0).unsqueeze(0)
        q, k = rope(q, k, cos, sin)
        if cache is not None:
            k, v = cache.write(self.layer, k, v, start)
        rep = self.n_heads // self.n_kv
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.d))
        att = att + bias
        att = att.softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, s, self.n_heads * self.d)
        return self.o_proj(y)


class FeedForward(nn.Module):
    def __init__(self, cfg: CallerBroadcastConfig):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, h):
        gated = F.silu(self.gate_proj(h))
        return self.down_proj(gated * self.up_proj(h))


class Layer(nn.Module):
    def __init__(self, cfg: CallerBroadcastConfig, index: int):
        super().__init__()
        self.attn_norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.attn = SelfAttention(cfg, index)
        self.ffn_norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.ffn = FeedForward(cfg)

    def forward(self, h, cos, sin, bias, cache, start):
        h = h + self.attn(self.attn_norm(h), cos, sin, bias, cache, start)
        h = h + self.ffn(self.ffn_norm(h))
        return h


class CallerBroadcastModel(nn.Module):
    def __init__(self, cfg: CallerBroadcastConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList([Layer(cfg, i) for i in range(cfg.num_hidden_layers)])
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.output = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, cfg.head_dim, 2).float() / cfg.head_dim))
        self.register_buffer("freq", freq, persistent=False)

    def forward(self, tokens, cache: Optional[KVBuffer] = None):
        s = tokens.shape[1]
        start = cache.length if cache is not None else 0
        t = torch.arange(start, start + s, dtype=torch.float32)
        angles = t[:, None] * self.freq[None, :]
        angles = torch.cat((angles, angles), dim=-1)
        h = self.tok_embeddings(tokens)
        cos = angles.cos().to(h.dtype)
        sin = angles.sin().to(h.dtype)
        kv_len = start + s
        allowed = torch.arange(kv_len)[None, :] <= torch.arange(start, kv_len)[:, None]
        bias = torch.zeros(s, kv_len).masked_fill(~allowed, float("-inf"))
        for layer in self.layers:
            h = layer(h, cos, sin, bias, cache, start)
        if cache is not None:
            cache.length += s
        return self.output(self.norm(h))


def from_config(values: dict) -> CallerBroadcastModel:
    return CallerBroadcastModel(parse_config(values))


@torch.no_grad()
def full_logits(model: CallerBroadcastModel, input_ids: torch.Tensor) -> torch.Tensor:
    return model(input_ids)


@torch.no_grad()
def incremental_logits(model: CallerBroadcastModel, input_ids: torch.Tensor, prompt_len: int) -> torch.Tensor:
    cache = KVBuffer(model.cfg, input_ids.shape[0], input_ids.shape[1])
    steps: List[torch.Tensor] = [model(input_ids[:, :prompt_len], cache)[:, -1]]
    for t in range(prompt_len, input_ids.shape[1]):
        steps.append(model(input_ids[:, t : t + 1], cache)[:, -1])
    return torch.stack(steps, dim=1)
