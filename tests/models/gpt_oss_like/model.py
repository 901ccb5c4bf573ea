"""GPT-OSS-style MoE decoder: the negative cases for the plain fused kernels.

* Clamped SwiGLU with an alpha-scaled sigmoid and an (up + 1) term:
      gate = min(gate, limit); up = clamp(up, -limit, limit)
      out  = (up + 1) * gate * sigmoid(alpha * gate)
  This is not silu(gate) * up, so it must not be mapped to a plain SwiGLU op.
  The gate and up columns are interleaved in one stacked weight
  (gate = [..., ::2], up = [..., 1::2]), not concatenated halves.
* Experts are stacked 3-D parameters evaluated for all tokens with bmm and
  weighted by a dense routing matrix; the router takes top-k of the raw logits
  and applies softmax over the k survivors only.
* Attention sinks: a learned per-head logit joins the softmax and is dropped after.
* Layers alternate between sliding-window and full attention.
"""
import math
from dataclasses import dataclass, field, fields
from typing import List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class GptOssLikeConfig:
    vocab_size: int = 201088
    hidden_size: int = 2880
    intermediate_size: int = 2880
    num_hidden_layers: int = 24
    num_attention_heads: int = 64
    num_key_value_heads: int = 8
    head_dim: int = 64
    num_local_experts: int = 32
    num_experts_per_tok: int = 4
    swiglu_limit: float = 7.0
    sliding_window: int = 128
    layer_types: List[str] = field(default_factory=list)
    rms_norm_eps: float = 1e-5
    rope_theta: float = 150000.0
    attention_bias: bool = True
    tie_word_embeddings: bool = False
    torch_dtype: str = "bfloat16"


def parse_config(values: dict) -> GptOssLikeConfig:
    known = {f.name for f in fields(GptOssLikeConfig)}
    cfg = GptOssLikeConfig(**{k: v for k, v in values.items() if k in known})
    if not cfg.layer_types:
        cfg.layer_types = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(cfg.num_hidden_layers)]
    if len(cfg.layer_types) != cfg.num_hidden_layers:
        raise ValueError("layer_types must name one attention kind per layer")
    return cfg


class GptOssRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.eps = eps

    def forward(self, hidden_states):
        dtype = hidden_states.dtype
        hidden_states = hidden_states.float()
        hidden_states = hidden_states * torch.rsqrt(hidden_states.pow(2).mean(-1, keepdim=True) + self.eps)
        return (self.weight * hidden_states).to(dtype)


def rope_tables(positions: torch.Tensor, head_dim: int, theta: float):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float) / head_dim))
    freqs = positions.float()[:, None] * inv_freq[None, :]
    return freqs.cos(), freqs.sin()  # [seq, head_dim/2]


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    # x: [bsz, heads, seq, head_dim], half arrangement.
    first_half, second_half = torch.chunk(x, 2, dim=-1)
    out_first = first_half * cos - second_half * sin
    out_second = second_half * cos + first_half * sin
    return torch.cat((out_first, out_second), dim=-1)


class GptOssAttention(nn.Module):
    def __init__(self, cfg: GptOssLikeConfig, layer_idx: int):
        super().__init__()
        self.head_dim = cfg.head_dim
        self.num_heads = cfg.num_attention_heads
        self.num_kv_heads = cfg.num_key_value_heads
        self.rope_theta = cfg.rope_theta
        self.sliding_window = cfg.sliding_window if cfg.layer_types[layer_idx] == "sliding_attention" else None
        self.q_proj = nn.Linear(cfg.hidden_size, self.num_heads * self.head_dim, bias=cfg.attention_bias)
        self.k_proj = nn.Linear(cfg.hidden_size, self.num_kv_heads * self.head_dim, bias=cfg.attention_bias)
        self.v_proj = nn.Linear(cfg.hidden_size, self.num_kv_heads * self.head_dim, bias=cfg.attention_bias)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, cfg.hidden_size, bias=cfg.attention_bias)
        self.sinks = nn.Parameter(torch.randn(self.num_heads) * 0.5)

    def forward(self, x, positions, past: Optional[Tuple[torch.Tensor, torch.Tensor]]):
        bsz, seq, _ = x.shape
        q = self.q_proj(x).view(bsz, seq, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, seq, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, seq, self.num_kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = rope_tables(positions, self.head_dim, self.rope_theta)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)

        if past is not None:
            k = torch.cat([past[0], k], dim=2)
            v = torch.cat([past[1], v], dim=2)
        present = (k, v)

        groups = self.num_heads // self.num_kv_heads
        k_all = k[:, :, None].expand(-1, -1, groups, -1, -1).reshape(bsz, self.num_heads, -1, self.head_dim)
        v_all = v[:, :, None].expand(-1, -1, groups, -1, -1).reshape(bsz, self.num_heads, -1, self.head_dim)
        logits = torch.matmul(q, k_all.transpose(2, 3)) * self.head_dim ** -0.5

        key_pos = torch.arange(k_all.shape[2])
        visible = key_pos[None, :] <= positions[:, None]
        if self.sliding_window is not None:
            visible = visible & (positions[:, None] - key_pos[None, :] < self.sliding_window)
        logits = logits.masked_fill(~visible, float("-inf"))

        # The sink is an extra column that absorbs probability mass but has no value vector.
        sink = self.sinks.view(1, -1, 1, 1).expand(bsz, -1, seq, 1)
        combined = torch.cat([logits, sink], dim=-1)
        combined = combined - combined.max(dim=-1, keepdim=True).values
        probs = F.softmax(combined.float(), dim=-1).to(q.dtype)[..., :-1]
        out = torch.matmul(probs, v_all).transpose(1, 2).reshape(bsz, seq, -1)
        return self.o_proj(out), present


class GptOssTopKRouter(nn.Module):
    def __init__(self, cfg: GptOssLikeConfig):
        super().__init__()
        self.top_k = cfg.num_experts_per_tok
        self.num_experts = cfg.num_local_experts
        self.weight = nn.Parameter(torch.randn(cfg.num_local_experts, cfg.hidden_size) * cfg.hidden_size ** -0.5)
        self.bias = nn.Parameter(torch.zeros(cfg.num_local_experts))

    def forward(self, tokens):
        router_logits = F.linear(tokens, self.weight, self.bias)
        top_values, top_indices = torch.topk(router_logits, self.top_k, dim=-1)
        top_values = F.softmax(top_values, dim=1, dtype=top_values.dtype)
        routing = torch.zeros_like(router_logits).scatter_(1, top_indices, top_values)
        return routing, top_indices


class GptOssExperts(nn.Module):
    def __init__(self, cfg: GptOssLikeConfig):
        super().__init__()
        e, h, i = cfg.num_local_experts, cfg.hidden_size, cfg.intermediate_size
        self.num_experts = e
        self.hidden_size = h
        self.gate_up_proj = nn.Parameter(torch.randn(e, h, 2 * i) * h ** -0.5)
        self.gate_up_proj_bias = nn.Parameter(torch.zeros(e, 2 * i))
        self.down_proj = nn.Parameter(torch.randn(e, i, h) * i ** -0.5)
        self.down_proj_bias = nn.Parameter(torch.zeros(e, h))
        self.alpha = 1.702
        self.limit = cfg.swiglu_limit

    def forward(self, tokens: torch.Tensor, routing_weights: torch.Tensor) -> torch.Tensor:
        num_tokens = tokens.shape[0]
        stacked = tokens.unsqueeze(0).expand(self.num_experts, -1, -1)  # every expert sees every token
        gate_up = torch.bmm(stacked, self.gate_up_proj) + self.gate_up_proj_bias[:, None, :]
        gate, up = gate_up[..., ::2], gate_up[..., 1::2]
        gate = gate.clamp(min=None, max=self.limit)
        up = up.clamp(min=-self.limit, max=self.limit)
        glu = gate * torch.sigmoid(gate * self.alpha)
        expert_out = torch.bmm((up + 1) * glu, self.down_proj) + self.down_proj_bias[:, None, :]
        weighted = expert_out * routing_weights.transpose(0, 1).reshape(self.num_experts, num_tokens, 1)
        return weighted.sum(dim=0)


class GptOssMLP(nn.Module):
    def __init__(self, cfg: GptOssLikeConfig):
        super().__init__()
        self.router = GptOssTopKRouter(cfg)
        self.experts = GptOssExperts(cfg)

    def forward(self, hidden_states):
        bsz, seq, hidden = hidden_states.shape
        tokens = hidden_states.reshape(-1, hidden)
        routing, _ = self.router(tokens)
        return self.experts(tokens, routing).reshape(bsz, seq, hidden)


class GptOssDecoderLayer(nn.Module):
    def __init__(self, cfg: GptOssLikeConfig, layer_idx: int):
        super().__init__()
        self.input_layernorm = GptOssRMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = GptOssAttention(cfg, layer_idx)
        self.post_attention_layernorm = GptOssRMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = GptOssMLP(cfg)

    def forward(self, x, positions, past=None):
        attn_out, present = self.self_attn(self.input_layernorm(x), positions, past)
        x = x + attn_out
        x = x + self.mlp(self.post_attention_layernorm(x))
        return x, present


class GptOssForCausalLM(nn.Module):
    def __init__(self, cfg: GptOssLikeConfig):
        super().__init__()
        self.config = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList([GptOssDecoderLayer(cfg, i) for i in range(cfg.num_hidden_layers)])
        self.norm = GptOssRMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)

    def forward(self, input_ids, past_key_values=None):
        offset = 0 if past_key_values is None else past_key_values[0][0].shape[2]
        positions = torch.arange(offset, offset + input_ids.shape[1])
        x = self.embed_tokens(input_ids)
        presents = []
        for i, layer in enumerate(self.layers):
            x, present = layer(x, positions, None if past_key_values is None else past_key_values[i])
            presents.append(present)
        return self.lm_head(self.norm(x)), presents


def from_config(values: dict) -> GptOssForCausalLM:
    return GptOssForCausalLM(parse_config(values))


@torch.no_grad()
def full_logits(model, input_ids):
    return model(input_ids)[0]


@torch.no_grad()
def incremental_logits(model, input_ids, prompt_len):
    logits, past = model(input_ids[:, :prompt_len])
    picked = [logits[:, -1]]
    for pos in range(prompt_len, input_ids.shape[1]):
        logits, past = model(input_ids[:, pos : pos + 1], past)
        picked.append(logits[:, -1])
    return torch.stack(picked, dim=1)


if __name__ == "__main__":
    torch.manual_seed(0)
    demo = from_config(dict(vocab_size=40, hidden_size=32, intermediate_size=16, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2, head_dim=8, num_local_experts=4,
                            num_experts_per_tok=2, sliding_window=3)).eval()
    print(math.isfinite(float(full_logits(demo, torch.randint(0, 40, (1, 6))).sum())))
