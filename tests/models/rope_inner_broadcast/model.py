"""Dense decoder whose RoPE helper broadcasts its own tables.

The rotary module hands out cos/sin as [seq, head_dim] tables (one row per
position, shared by the whole batch), and the helper that rotates q and k
turns them into [1, 1, seq, head_dim] itself before the multiply:
`cos = cos[None, None]`. A fused rewrite that assumes HF's
`cos.unsqueeze(unsqueeze_dim)` form would add one axis too many here.
Other traits: a KV cache kept as a list of (key, value) pairs grown with
torch.cat in [bsz, heads, seq, head_dim]; GQA by expand + reshape; the
attention softmax in float32; a SwiGLU MLP with separate gate and up.
"""
import math
from dataclasses import dataclass, fields
from typing import List, Optional, Tuple

import torch
from torch import nn
from torch.nn import functional as F


@dataclass
class InnerBroadcastConfig:
    vocab_size: int = 32000
    hidden_size: int = 2048
    intermediate_size: int = 5632
    num_hidden_layers: int = 22
    num_attention_heads: int = 24
    num_key_value_heads: int = 4
    head_dim: int = 96
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    max_position_embeddings: int = 2048
    torch_dtype: str = "bfloat16"


def parse_config(values: dict) -> InnerBroadcastConfig:
    known = {f.name for f in fields(InnerBroadcastConfig)}
    cfg = InnerBroadcastConfig(**{k: v for k, v in values.items() if k in known})
    if cfg.num_attention_heads % cfg.num_key_value_heads:
        raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")
    return cfg


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(size))

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


class PositionTables(nn.Module):
    """cos/sin of shape [seq, head_dim] for the positions asked for."""

    def __init__(self, head_dim: int, theta: float):
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, positions: torch.Tensor, dtype: torch.dtype):
        angles = torch.outer(positions.to(torch.float32), self.inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        return angles.cos().to(dtype), angles.sin().to(dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def rotate_qk(q, k, cos, sin):
    # q, k: [bsz, heads, seq, head_dim]; the [seq, head_dim] tables get their
    # batch and head axes here.
    cos = cos[None, None]
    sin = sin[None, None]
    q_rot = q * cos + rotate_half(q) * sin
    k_rot = k * cos + rotate_half(k) * sin
    return q_rot, k_rot


class Attention(nn.Module):
    def __init__(self, cfg: InnerBroadcastConfig):
        super().__init__()
        self.heads = cfg.num_attention_heads
        self.kv_heads = cfg.num_key_value_heads
        self.head_dim = cfg.head_dim
        self.q_proj = nn.Linear(cfg.hidden_size, self.heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(cfg.hidden_size, self.kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(cfg.hidden_size, self.kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.heads * self.head_dim, cfg.hidden_size, bias=False)

    def forward(self, x, cos, sin, past: Optional[Tuple[torch.Tensor, torch.Tensor]] = None):
        bsz, seq, _ = x.shape
        q = self.q_proj(x).view(bsz, seq, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, seq, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, seq, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = rotate_qk(q, k, cos, sin)
        if past is not None:
            k = torch.cat((past[0], k), dim=2)
            v = torch.cat((past[1], v), dim=2)
        present = (k, v)

        group = self.heads // self.kv_heads
        kv_len = k.shape[2]
        k = k[:, :, None].expand(bsz, self.kv_heads, group, kv_len, self.head_dim).reshape(bsz, self.heads, kv_len, self.head_dim)
        v = v[:, :, None].expand(bsz, self.kv_heads, group, kv_len, self.head_dim).reshape(bsz, self.heads, kv_len, self.head_dim)

        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        if seq > 1:
            # Query i sits at position kv_len - seq + i and sees keys up to it.
            blocked = torch.ones(seq, kv_len, dtype=torch.bool).triu(kv_len - seq + 1)
            scores = scores.masked_fill(blocked, float("-inf"))
        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(bsz, seq, -1)
        return self.o_proj(out), present


class MLP(nn.Module):
    def __init__(self, cfg: InnerBroadcastConfig):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, cfg: InnerBroadcastConfig):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, x, cos, sin, past=None):
        attn_out, present = self.self_attn(self.input_layernorm(x), cos, sin, past)
        x = x + attn_out
        x = x + self.mlp(self.post_attention_layernorm(x))
        return x, present


class InnerBroadcastForCausalLM(nn.Module):
    def __init__(self, cfg: InnerBroadcastConfig):
        super().__init__()
        self.config = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.rotary = PositionTables(cfg.head_dim, cfg.rope_theta)
        self.layers = nn.ModuleList([Block(cfg) for _ in range(cfg.num_hidden_layers)])
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)

    def forward(self, input_ids, cache: Optional[List[Tuple[torch.Tensor, torch.Tensor]]] = None):
        start = cache[0][0].shape[2] if cache else 0
        positions = torch.arange(start, start + input_ids.shape[1])
        x = self.embed_tokens(input_ids)
        cos, sin = self.rotary(positions, x.dtype)
        presents = []
        for i, layer in enumerate(self.layers):
            x, present = layer(x, cos, sin, cache[i] if cache else None)
            presents.append(present)
        return self.lm_head(self.norm(x)), presents


def from_config(values: dict) -> InnerBroadcastForCausalLM:
    return InnerBroadcastForCausalLM(parse_config(values))


@torch.no_grad()
def full_logits(model: InnerBroadcastForCausalLM, input_ids: torch.Tensor) -> torch.Tensor:
    return model(input_ids)[0]


@torch.no_grad()
def incremental_logits(model: InnerBroadcastForCausalLM, input_ids: torch.Tensor, prompt_len: int) -> torch.Tensor:
    logits, cache = model(input_ids[:, :prompt_len])
    outputs = [logits[:, -1]]
    for t in range(prompt_len, input_ids.shape[1]):
        logits, cache = model(input_ids[:, t : t + 1], cache)
        outputs.append(logits[:, -1])
    return torch.stack(outputs, dim=1)
