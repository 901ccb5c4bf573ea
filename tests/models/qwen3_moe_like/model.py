"""Qwen3-MoE / Mixtral-style sparse decoder.

Routing: softmax over all experts, then top-k, optionally renormalised
(norm_topk_prob). Experts are a ModuleList of SwiGLU MLPs visited by the
usual one_hot / torch.where / index_add_ loop. Attention keeps its cache as a
tuple (key, value) per layer in [bsz, seq, kv_heads, head_dim] order and grows
it with torch.cat; GQA uses repeat_interleave on the head axis.
"""
import math
from dataclasses import dataclass, field, fields
from typing import List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

LayerCache = Tuple[torch.Tensor, torch.Tensor]

# Config overrides the test runner also exercises (Mixtral keeps the renormalisation, some models drop it).
VARIANTS = [{}, {"norm_topk_prob": False}]


@dataclass
class Qwen3MoeLikeConfig:
    vocab_size: int = 151936
    hidden_size: int = 2048
    intermediate_size: int = 6144
    moe_intermediate_size: int = 768
    num_hidden_layers: int = 48
    num_attention_heads: int = 32
    num_key_value_heads: int = 4
    head_dim: int = 128
    num_experts: int = 128
    num_experts_per_tok: int = 8
    norm_topk_prob: bool = True
    decoder_sparse_step: int = 1
    mlp_only_layers: List[int] = field(default_factory=list)
    router_aux_loss_coef: float = 0.001
    rms_norm_eps: float = 1e-6
    rope_theta: float = 1000000.0
    max_position_embeddings: int = 40960
    tie_word_embeddings: bool = False
    torch_dtype: str = "bfloat16"


def parse_config(values: dict) -> Qwen3MoeLikeConfig:
    accepted = {f.name for f in fields(Qwen3MoeLikeConfig)}
    cfg = Qwen3MoeLikeConfig(**{k: v for k, v in values.items() if k in accepted})
    if cfg.num_experts_per_tok > cfg.num_experts:
        raise ValueError("num_experts_per_tok exceeds num_experts")
    return cfg


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.variance_epsilon = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, hidden_states):
        # Reduce in float32; the gain multiplies the result in the input dtype.
        x32 = hidden_states.to(torch.float32)
        inv_rms = torch.rsqrt(x32.square().mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * (x32 * inv_rms).to(hidden_states.dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    # q/k: [bsz, seq, heads, dim]; cos/sin: [bsz, seq, dim] -> broadcast over heads (dim 2).
    cos = cos.unsqueeze(2)
    sin = sin.unsqueeze(2)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim: int, base: float):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, position_ids: torch.Tensor, dtype: torch.dtype):
        freqs = torch.einsum("bs,d->bsd", position_ids.float(), self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype), emb.sin().to(dtype)


class Qwen3MoeAttention(nn.Module):
    def __init__(self, cfg: Qwen3MoeLikeConfig):
        super().__init__()
        self.num_heads = cfg.num_attention_heads
        self.num_kv_heads = cfg.num_key_value_heads
        self.head_dim = cfg.head_dim
        self.q_proj = nn.Linear(cfg.hidden_size, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(cfg.hidden_size, self.num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(cfg.hidden_size, self.num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, cfg.hidden_size, bias=False)
        self.q_norm = RMSNorm(self.head_dim, eps=cfg.rms_norm_eps)
        self.k_norm = RMSNorm(self.head_dim, eps=cfg.rms_norm_eps)

    def forward(self, hidden_states, cos, sin, past_key_value: Optional[LayerCache] = None):
        bsz, q_len, _ = hidden_states.shape
        q = self.q_norm(self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim))
        k = self.k_norm(self.k_proj(hidden_states).view(bsz, q_len, self.num_kv_heads, self.head_dim))
        v = self.v_proj(hidden_states).view(bsz, q_len, self.num_kv_heads, self.head_dim)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)

        # Cache lives in BSND; append along the sequence axis.
        if past_key_value is not None:
            k = torch.cat([past_key_value[0], k], dim=1)
            v = torch.cat([past_key_value[1], v], dim=1)
        present = (k, v)

        n_rep = self.num_heads // self.num_kv_heads
        k_full = torch.repeat_interleave(k, repeats=n_rep, dim=2)
        v_full = torch.repeat_interleave(v, repeats=n_rep, dim=2)

        q = q.transpose(1, 2)
        k_full = k_full.transpose(1, 2)
        v_full = v_full.transpose(1, 2)
        scores = q @ k_full.transpose(-2, -1) * (1.0 / math.sqrt(self.head_dim))
        if q_len > 1:
            kv_len = k_full.shape[-2]
            future = torch.ones(q_len, kv_len, dtype=torch.bool).triu(kv_len - q_len + 1)
            scores = scores.masked_fill(future, float("-inf"))
        probs = scores.softmax(dim=-1)
        attn = (probs @ v_full).transpose(1, 2).reshape(bsz, q_len, self.num_heads * self.head_dim)
        return self.o_proj(attn), present


class Qwen3MoeMLP(nn.Module):
    def __init__(self, hidden_size: int, intermediate_size: int):
        super().__init__()
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def load_balancing_loss(router_logits: torch.Tensor, num_experts: int, top_k: int) -> torch.Tensor:
    probs = torch.softmax(router_logits.float(), dim=-1)
    _, chosen = torch.topk(probs, top_k, dim=-1)
    dispatch = F.one_hot(chosen, num_experts).float().sum(dim=1)
    return num_experts * (dispatch.mean(0) * probs.mean(0)).sum() / top_k


class Qwen3MoeSparseMoeBlock(nn.Module):
    def __init__(self, cfg: Qwen3MoeLikeConfig):
        super().__init__()
        self.num_experts = cfg.num_experts
        self.top_k = cfg.num_experts_per_tok
        self.norm_topk_prob = cfg.norm_topk_prob
        self.gate = nn.Linear(cfg.hidden_size, cfg.num_experts, bias=False)
        self.experts = nn.ModuleList(
            [Qwen3MoeMLP(cfg.hidden_size, cfg.moe_intermediate_size) for _ in range(cfg.num_experts)]
        )
        self.aux_loss: Optional[torch.Tensor] = None

    def forward(self, hidden_states: torch.Tensor):
        bsz, seq_len, hidden_dim = hidden_states.shape
        tokens = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(tokens)  # [num_tokens, num_experts]

        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        if self.norm_topk_prob:
            routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(tokens.dtype)

        if self.training:
            self.aux_loss = load_balancing_loss(router_logits, self.num_experts, self.top_k)

        combined = torch.zeros((bsz * seq_len, hidden_dim), dtype=tokens.dtype, device=tokens.device)
        # expert_mask[e, k, t] is 1 when token t picked expert e as its k-th choice.
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in range(self.num_experts):
            slot, token_idx = torch.where(expert_mask[expert_idx])
            if token_idx.numel() == 0:
                continue
            expert_input = tokens[token_idx]
            expert_out = self.experts[expert_idx](expert_input) * routing_weights[token_idx, slot, None]
            combined.index_add_(0, token_idx, expert_out.to(tokens.dtype))
        return combined.reshape(bsz, seq_len, hidden_dim), router_logits


class Qwen3MoeDecoderLayer(nn.Module):
    def __init__(self, cfg: Qwen3MoeLikeConfig, layer_idx: int):
        super().__init__()
        self.self_attn = Qwen3MoeAttention(cfg)
        sparse = layer_idx not in cfg.mlp_only_layers and (layer_idx + 1) % cfg.decoder_sparse_step == 0
        if sparse and cfg.num_experts > 0:
            self.mlp = Qwen3MoeSparseMoeBlock(cfg)
        else:
            self.mlp = Qwen3MoeMLP(cfg.hidden_size, cfg.intermediate_size)
        self.input_layernorm = RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)

    def forward(self, hidden_states, cos, sin, past_key_value=None):
        residual = hidden_states
        hidden_states, present = self.self_attn(self.input_layernorm(hidden_states), cos, sin, past_key_value)
        hidden_states = residual + hidden_states

        residual = hidden_states
        mlp_out = self.mlp(self.post_attention_layernorm(hidden_states))
        router_logits = None
        if isinstance(mlp_out, tuple):
            mlp_out, router_logits = mlp_out
        hidden_states = residual + mlp_out
        return hidden_states, present, router_logits


class Qwen3MoeForCausalLM(nn.Module):
    def __init__(self, cfg: Qwen3MoeLikeConfig):
        super().__init__()
        self.config = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList([Qwen3MoeDecoderLayer(cfg, i) for i in range(cfg.num_hidden_layers)])
        self.norm = RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.rotary_emb = RotaryEmbedding(cfg.head_dim, cfg.rope_theta)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)

    def forward(self, input_ids, past_key_values: Optional[List[LayerCache]] = None, output_router_logits=False):
        bsz, seq_len = input_ids.shape
        past_len = 0 if past_key_values is None else past_key_values[0][0].shape[1]
        position_ids = torch.arange(past_len, past_len + seq_len).unsqueeze(0).expand(bsz, seq_len)

        hidden_states = self.embed_tokens(input_ids)
        cos, sin = self.rotary_emb(position_ids, hidden_states.dtype)
        presents: List[LayerCache] = []
        all_router_logits = []
        for i, layer in enumerate(self.layers):
            layer_past = None if past_key_values is None else past_key_values[i]
            hidden_states, present, router_logits = layer(hidden_states, cos, sin, layer_past)
            presents.append(present)
            if output_router_logits and router_logits is not None:
                all_router_logits.append(router_logits)
        logits = self.lm_head(self.norm(hidden_states))
        if output_router_logits:
            return logits, presents, all_router_logits
        return logits, presents


def from_config(values: dict) -> Qwen3MoeForCausalLM:
    return Qwen3MoeForCausalLM(parse_config(values))


@torch.no_grad()
def full_logits(model, input_ids):
    return model(input_ids)[0]


@torch.no_grad()
def incremental_logits(model, input_ids, prompt_len):
    logits, past = model(input_ids[:, :prompt_len])
    collected = [logits[:, -1]]
    for i in range(prompt_len, input_ids.shape[1]):
        logits, past = model(input_ids[:, i : i + 1], past_key_values=past)
        collected.append(logits[:, -1])
    return torch.stack(collected, dim=1)


if __name__ == "__main__":
    torch.manual_seed(0)
    m = from_config(dict(vocab_size=40, hidden_size=32, intermediate_size=64, moe_intermediate_size=16,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                         num_experts=4, num_experts_per_tok=2)).eval()
    print(incremental_logits(m, torch.randint(0, 40, (1, 6)), 3).shape)
