"""GPT-J-style decoder.

* Interleaved rotary embedding: channel pairs (2i, 2i+1) rotate together
  (rotate_every_two builds them with an even/odd stack and a flatten).
* Partial rotary: only the first rotary_dim channels of each head rotate.
* Attention and MLP read the same normed input and add to the residual in
  parallel: h = x + attn(ln_1(x)) + mlp(ln_1(x)).
* Scores are computed in float32 against a registered lower-triangular mask.
* MLP is fc_in -> tanh-approximated GeLU ("gelu_new") -> fc_out, with biases.
* Per-layer (key, value) tuples in [bsz, heads, seq, head_dim] form the cache.
"""
import math
from dataclasses import dataclass, fields
from typing import List, Optional, Tuple

import torch
import torch.nn as nn

# The runner also checks the full-rotary form (every channel rotates).
VARIANTS = [{}, {"rotary_dim": None}]


@dataclass
class GPTJStyleConfig:
    vocab_size: int = 50400
    n_positions: int = 2048
    n_embd: int = 4096
    n_layer: int = 28
    n_head: int = 16
    rotary_dim: Optional[int] = 64
    n_inner: Optional[int] = None
    activation_function: str = "gelu_new"
    layer_norm_epsilon: float = 1e-5
    tie_word_embeddings: bool = False
    torch_dtype: str = "float16"


def parse_config(values: dict) -> GPTJStyleConfig:
    allowed = {f.name for f in fields(GPTJStyleConfig)}
    config = GPTJStyleConfig(**{k: v for k, v in values.items() if k in allowed})
    if config.n_embd % config.n_head:
        raise ValueError("n_embd must be divisible by n_head")
    return config


def create_sinusoidal_positions(num_pos: int, dim: int) -> torch.Tensor:
    """[num_pos, dim] table: the first dim/2 columns are sin, the last dim/2 are cos."""
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.int64) / dim))
    angles = torch.arange(num_pos, dtype=torch.float).unsqueeze(1) * inv_freq.float().unsqueeze(0)
    return torch.cat((torch.sin(angles), torch.cos(angles)), dim=1)


def rotate_every_two(x: torch.Tensor) -> torch.Tensor:
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)  # back to [..., dim] with (-x2_i, x1_i) interleaved


def apply_rotary_pos_emb(tensor: torch.Tensor, sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
    # tensor: [bsz, seq, heads, rotary_dim]; sin/cos: [bsz, seq, rotary_dim/2] -> duplicated per pair
    sin = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
    cos = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
    return (tensor * cos) + (rotate_every_two(tensor) * sin)


def gelu_new(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPTJAttention(nn.Module):
    def __init__(self, config: GPTJStyleConfig):
        super().__init__()
        max_positions = config.n_positions
        causal = torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool))
        self.register_buffer("bias", causal.view(1, 1, max_positions, max_positions), persistent=False)
        self.embed_dim = config.n_embd
        self.num_attention_heads = config.n_head
        self.head_dim = self.embed_dim // self.num_attention_heads
        self.scale_attn = math.sqrt(self.head_dim)
        self.rotary_dim = config.rotary_dim
        pos_embd_dim = self.rotary_dim or self.head_dim
        self.register_buffer("embed_positions", create_sinusoidal_positions(max_positions, pos_embd_dim), persistent=False)

        self.k_proj = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.v_proj = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.q_proj = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.out_proj = nn.Linear(self.embed_dim, self.embed_dim, bias=False)

    def _split_heads(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.view(tensor.size()[:-1] + (self.num_attention_heads, self.head_dim))

    def _attn(self, query, key, value):
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]

        # Keep the dot products in float32 even when the model runs in half precision.
        query = query.to(torch.float32)
        key = key.to(torch.float32)
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        mask_value = torch.tensor(torch.finfo(attn_weights.dtype).min, dtype=attn_weights.dtype)
        attn_weights = torch.where(causal_mask, attn_weights, mask_value)
        attn_weights = attn_weights / self.scale_attn
        attn_weights = nn.functional.softmax(attn_weights, dim=-1).to(value.dtype)
        return torch.matmul(attn_weights, value), attn_weights

    def forward(self, hidden_states, position_ids, layer_past: Optional[Tuple[torch.Tensor, torch.Tensor]] = None):
        query = self._split_heads(self.q_proj(hidden_states))  # [bsz, seq, heads, head_dim]
        key = self._split_heads(self.k_proj(hidden_states))
        value = self._split_heads(self.v_proj(hidden_states)).permute(0, 2, 1, 3)

        sincos = self.embed_positions[position_ids]
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)

        if self.rotary_dim is not None:
            k_rot = key[:, :, :, : self.rotary_dim]
            k_pass = key[:, :, :, self.rotary_dim :]
            q_rot = query[:, :, :, : self.rotary_dim]
            q_pass = query[:, :, :, self.rotary_dim :]
            k_rot = apply_rotary_pos_emb(k_rot, sin, cos)
            q_rot = apply_rotary_pos_emb(q_rot, sin, cos)
            key = torch.cat([k_rot, k_pass], dim=-1)
            query = torch.cat([q_rot, q_pass], dim=-1)
        else:
            key = apply_rotary_pos_emb(key, sin, cos)
            query = apply_rotary_pos_emb(query, sin, cos)

        key = key.permute(0, 2, 1, 3)
        query = query.permute(0, 2, 1, 3)
        if layer_past is not None:
            key = torch.cat((layer_past[0], key), dim=-2)
            value = torch.cat((layer_past[1], value), dim=-2)
        present = (key, value)

        attn_output, _ = self._attn(query, key, value)
        attn_output = attn_output.permute(0, 2, 1, 3).contiguous()
        attn_output = attn_output.view(attn_output.size()[:-2] + (self.embed_dim,))
        return self.out_proj(attn_output), present


class GPTJMLP(nn.Module):
    def __init__(self, intermediate_size: int, config: GPTJStyleConfig):
        super().__init__()
        self.fc_in = nn.Linear(config.n_embd, intermediate_size)
        self.fc_out = nn.Linear(intermediate_size, config.n_embd)

    def forward(self, hidden_states):
        return self.fc_out(gelu_new(self.fc_in(hidden_states)))


class GPTJBlock(nn.Module):
    def __init__(self, config: GPTJStyleConfig):
        super().__init__()
        inner_dim = config.n_inner if config.n_inner is not None else 4 * config.n_embd
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.attn = GPTJAttention(config)
        self.mlp = GPTJMLP(inner_dim, config)

    def forward(self, hidden_states, position_ids, layer_past=None):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        attn_output, present = self.attn(hidden_states, position_ids, layer_past)
        feed_forward_hidden_states = self.mlp(hidden_states)
        hidden_states = attn_output + feed_forward_hidden_states + residual
        return hidden_states, present


class GPTJForCausalLM(nn.Module):
    def __init__(self, config: GPTJStyleConfig):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.h = nn.ModuleList([GPTJBlock(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size)

    def forward(self, input_ids, past_key_values: Optional[List[Tuple[torch.Tensor, torch.Tensor]]] = None):
        past_length = 0 if past_key_values is None else past_key_values[0][0].size(-2)
        position_ids = torch.arange(past_length, past_length + input_ids.shape[-1], dtype=torch.long)
        position_ids = position_ids.unsqueeze(0).expand_as(input_ids)

        hidden_states = self.wte(input_ids)
        presents = []
        for i, block in enumerate(self.h):
            layer_past = past_key_values[i] if past_key_values is not None else None
            hidden_states, present = block(hidden_states, position_ids, layer_past)
            presents.append(present)
        hidden_states = self.ln_f(hidden_states)
        # GPT-J computes its logits in float32 for sampling stability.
        logits = self.lm_head(hidden_states).to(torch.float32)
        return logits, presents


def from_config(values: dict) -> GPTJForCausalLM:
    return GPTJForCausalLM(parse_config(values))


@torch.no_grad()
def full_logits(model, input_ids):
    return model(input_ids)[0]


@torch.no_grad()
def incremental_logits(model, input_ids, prompt_len):
    logits, past = model(input_ids[:, :prompt_len])
    out = [logits[:, -1]]
    for i in range(prompt_len, input_ids.shape[1]):
        logits, past = model(input_ids[:, i : i + 1], past)
        out.append(logits[:, -1])
    return torch.stack(out, dim=1)
