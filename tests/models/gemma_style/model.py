"""Gemma-style decoder, written like a standalone reference implementation.

* RMSNorm computes in float32 and scales by (1 + weight); the weight is stored
  as an offset from one and starts at zero.
* GeGLU MLP: gelu(gate, tanh approximation) * up, then down.
* Input embeddings are multiplied by sqrt(hidden_size); the LM head reuses the
  embedding matrix (tied weights).
* One merged qkv_proj, split after the matmul.
* RoPE in the non-interleaved (half) arrangement, but computed with complex
  numbers: the two halves of each head become the real and imaginary parts.
* KV cache: preallocated [bsz, max_seq, kv_heads, head_dim] tensors written with
  index_copy_ at kv_write_indices; the causal mask is a precomputed
  [max_seq, max_seq] table whose rows are picked by the input positions.
* Optional final logit soft-capping, tanh(logits / cap) * cap.
"""
import math
from dataclasses import dataclass, fields
from typing import List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn

# Gemma 1 has no soft-capping; later Gemma releases cap the final logits.
VARIANTS = [{}, {"final_logit_softcapping": 30.0}]


@dataclass
class GemmaStyleConfig:
    vocab_size: int = 256000
    hidden_size: int = 3072
    intermediate_size: int = 24576
    num_hidden_layers: int = 28
    num_attention_heads: int = 16
    num_key_value_heads: int = 16
    head_dim: int = 256
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    max_position_embeddings: int = 8192
    hidden_activation: str = "gelu_pytorch_tanh"
    final_logit_softcapping: Optional[float] = None
    tie_word_embeddings: bool = True
    torch_dtype: str = "bfloat16"


def parse_config(values: dict) -> GemmaStyleConfig:
    allowed = {f.name for f in fields(GemmaStyleConfig)}
    cfg = GemmaStyleConfig(**{k: v for k, v in values.items() if k in allowed})
    if not cfg.tie_word_embeddings:
        raise ValueError("this Gemma-style model always ties the LM head to the embedding")
    return cfg


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6, add_unit_offset: bool = True):
        super().__init__()
        self.eps = eps
        self.add_unit_offset = add_unit_offset
        self.weight = nn.Parameter(torch.zeros(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        output = self._norm(x.float())
        if self.add_unit_offset:
            output = output * (1 + self.weight.float())
        else:
            output = output * self.weight.float()
        return output.type_as(x)


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0) -> torch.Tensor:
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rotary_emb(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    """x: [bsz, seq, heads, head_dim]. Channel i pairs with channel i + head_dim/2."""
    halves = torch.chunk(x.transpose(1, 2).float(), 2, dim=-1)
    x_complex = torch.view_as_complex(torch.stack(halves, dim=-1))
    rotated = torch.view_as_real(x_complex * freqs_cis).type_as(x)  # [b, h, s, d/2, 2]
    rotated = torch.cat(torch.chunk(rotated, 2, dim=-1), dim=-2)
    return rotated.reshape(rotated.shape[0], rotated.shape[1], rotated.shape[2], -1).transpose(1, 2)


class GemmaMLP(nn.Module):
    def __init__(self, hidden_size: int, intermediate_size: int):
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size)
        self.up_proj = nn.Linear(hidden_size, intermediate_size)
        self.down_proj = nn.Linear(intermediate_size, hidden_size)

    def forward(self, x):
        gate = F.gelu(self.gate_proj(x), approximate="tanh")
        fuse = gate * self.up_proj(x)
        return self.down_proj(fuse)


class GemmaAttention(nn.Module):
    def __init__(self, cfg: GemmaStyleConfig):
        super().__init__()
        self.num_heads = cfg.num_attention_heads
        self.num_kv_heads = cfg.num_key_value_heads
        self.num_queries_per_kv = self.num_heads // self.num_kv_heads
        self.head_dim = cfg.head_dim
        self.q_size = self.num_heads * self.head_dim
        self.kv_size = self.num_kv_heads * self.head_dim
        self.scaling = self.head_dim ** -0.5
        self.qkv_proj = nn.Linear(cfg.hidden_size, self.q_size + 2 * self.kv_size, bias=False)
        self.o_proj = nn.Linear(self.q_size, cfg.hidden_size, bias=False)

    def forward(self, hidden_states, freqs_cis, kv_write_indices, kv_cache: Tuple[torch.Tensor, torch.Tensor], mask):
        batch_size, input_len, _ = hidden_states.shape
        qkv = self.qkv_proj(hidden_states)
        xq, xk, xv = qkv.split([self.q_size, self.kv_size, self.kv_size], dim=-1)
        xq = xq.view(batch_size, -1, self.num_heads, self.head_dim)
        xk = xk.view(batch_size, -1, self.num_kv_heads, self.head_dim)
        xv = xv.view(batch_size, -1, self.num_kv_heads, self.head_dim)

        xq = apply_rotary_emb(xq, freqs_cis=freqs_cis)
        xk = apply_rotary_emb(xk, freqs_cis=freqs_cis)

        # Write the new keys/values at their positions, then attend over the whole buffer.
        k_cache, v_cache = kv_cache
        k_cache.index_copy_(1, kv_write_indices, xk)
        v_cache.index_copy_(1, kv_write_indices, xv)
        key, value = k_cache, v_cache
        if self.num_kv_heads != self.num_heads:
            key = torch.repeat_interleave(key, self.num_queries_per_kv, dim=2)
            value = torch.repeat_interleave(value, self.num_queries_per_kv, dim=2)

        q = xq.transpose(1, 2) * self.scaling  # [b, heads, s, d]
        k = key.transpose(1, 2)
        v = value.transpose(1, 2)
        scores = torch.matmul(q, k.transpose(2, 3)) + mask
        scores = F.softmax(scores.float(), dim=-1).type_as(q)
        output = torch.matmul(scores, v)
        output = output.transpose(1, 2).contiguous().view(batch_size, input_len, -1)
        return self.o_proj(output)


class GemmaDecoderLayer(nn.Module):
    def __init__(self, cfg: GemmaStyleConfig):
        super().__init__()
        self.self_attn = GemmaAttention(cfg)
        self.mlp = GemmaMLP(cfg.hidden_size, cfg.intermediate_size)
        self.input_layernorm = RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)

    def forward(self, hidden_states, freqs_cis, kv_write_indices, kv_cache, mask):
        # Attention on the normalised input, added back onto the unnormalised stream.
        normed_in = self.input_layernorm(hidden_states)
        after_attn = hidden_states + self.self_attn(normed_in, freqs_cis, kv_write_indices, kv_cache, mask)

        # Same shape of sub-block for the feed-forward network.
        normed_mid = self.post_attention_layernorm(after_attn)
        mlp_out = self.mlp(normed_mid)
        # Second skip connection closes the block.
        return after_attn + mlp_out


class GemmaForCausalLM(nn.Module):
    def __init__(self, cfg: GemmaStyleConfig):
        super().__init__()
        self.config = cfg
        self.embedder = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList([GemmaDecoderLayer(cfg) for _ in range(cfg.num_hidden_layers)])
        self.norm = RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.register_buffer(
            "freqs_cis", precompute_freqs_cis(cfg.head_dim, cfg.max_position_embeddings * 2, cfg.rope_theta),
            persistent=False,
        )
        causal = torch.full((cfg.max_position_embeddings, cfg.max_position_embeddings), -2.3819763e38)
        self.register_buffer("causal_mask", torch.triu(causal, diagonal=1), persistent=False)

    def new_kv_caches(self, batch_size: int, dtype=torch.float32) -> List[Tuple[torch.Tensor, torch.Tensor]]:
        shape = (batch_size, self.config.max_position_embeddings, self.config.num_key_value_heads, self.config.head_dim)
        return [(torch.zeros(shape, dtype=dtype), torch.zeros(shape, dtype=dtype)) for _ in self.layers]

    @torch.no_grad()
    def forward(self, input_token_ids, input_positions, kv_caches, output_positions: Optional[torch.Tensor] = None):
        freqs_cis = self.freqs_cis.index_select(0, input_positions)
        kv_write_indices = input_positions
        mask = self.causal_mask.index_select(0, input_positions)[None, None, :, :]

        hidden_states = self.embedder(input_token_ids)
        normalizer = torch.tensor(self.config.hidden_size ** 0.5, dtype=hidden_states.dtype)
        hidden_states = hidden_states * normalizer
        for layer, kv_cache in zip(self.layers, kv_caches):
            hidden_states = layer(hidden_states, freqs_cis, kv_write_indices, kv_cache, mask)
        hidden_states = self.norm(hidden_states)

        if output_positions is not None:
            hidden_states = hidden_states.index_select(1, output_positions)
        logits = torch.matmul(hidden_states, self.embedder.weight.t())
        cap = self.config.final_logit_softcapping
        if cap is not None:
            logits = torch.tanh(logits / cap) * cap
        return logits


def from_config(values: dict) -> GemmaForCausalLM:
    model = GemmaForCausalLM(parse_config(values))
    # Checkpoints store non-trivial norm offsets; start away from zero so (1 + w) matters.
    for name, param in model.named_parameters():
        if name.endswith("layernorm.weight") or name == "norm.weight":
            param.data.uniform_(-0.5, 0.5)
    return model


def full_logits(model: GemmaForCausalLM, input_ids: torch.Tensor) -> torch.Tensor:
    positions = torch.arange(input_ids.shape[1])
    return model(input_ids, positions, model.new_kv_caches(input_ids.shape[0]))


def incremental_logits(model: GemmaForCausalLM, input_ids: torch.Tensor, prompt_len: int) -> torch.Tensor:
    caches = model.new_kv_caches(input_ids.shape[0])
    last = torch.tensor([prompt_len - 1])
    rows = [model(input_ids[:, :prompt_len], torch.arange(prompt_len), caches, output_positions=last)[:, 0]]
    for pos in range(prompt_len, input_ids.shape[1]):
        rows.append(model(input_ids[:, pos : pos + 1], torch.tensor([pos]), caches)[:, 0])
    return torch.stack(rows, dim=1)


if __name__ == "__main__":
    torch.manual_seed(0)
    demo = from_config(dict(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                            num_attention_heads=2, num_key_value_heads=1, head_dim=8,
                            max_position_embeddings=16))
    print(math.isfinite(float(full_logits(demo, torch.randint(0, 32, (1, 5))).sum())))
