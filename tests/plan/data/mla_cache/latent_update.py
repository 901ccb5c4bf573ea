# MLA in the Hugging Face 5.x form: the latent and the shared rope key go to the
# cache object (`past_key_values.update(latent, rope_key, layer_idx)`), and the
# per-head keys are assembled afterwards in a buffer made with new_empty.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Norm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class LatentAttention(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.layer_idx = layer_idx
        self.num_heads = config.num_attention_heads
        self.nope = config.qk_nope_head_dim
        self.rope = config.qk_rope_head_dim
        self.v_dim = config.v_head_dim
        self.rank = config.kv_lora_rank
        self.scaling = (self.nope + self.rope) ** -0.5
        self.q_a_proj = nn.Linear(config.hidden_size, config.q_lora_rank, bias=False)
        self.q_a_layernorm = Norm(config.q_lora_rank)
        self.q_b_proj = nn.Linear(config.q_lora_rank, self.num_heads * (self.nope + self.rope), bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(config.hidden_size, self.rank + self.rope, bias=False)
        self.kv_a_layernorm = Norm(self.rank)
        self.kv_b_proj = nn.Linear(self.rank, self.num_heads * (self.nope + self.v_dim), bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.v_dim, config.hidden_size, bias=False)

    def keys_and_values(self, latent, rope_key):
        b, _, s, _ = latent.shape
        kv = self.kv_b_proj(latent).view(b, s, -1, self.nope + self.v_dim).transpose(1, 2)
        k_nope, values = torch.split(kv, [self.nope, self.v_dim], dim=-1)
        rope_key = rope_key.expand(-1, k_nope.shape[1], -1, -1)
        keys = kv.new_empty(*kv.shape[:-1], self.nope + self.rope)
        keys[..., : self.nope].copy_(k_nope)
        keys[..., self.nope :].copy_(rope_key)
        return keys, values

    def forward(self, hidden_states, position_embeddings, attention_mask=None, past_key_values=None):
        b, s = hidden_states.shape[:-1]
        q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(hidden_states)))
        q = q.view(b, s, -1, self.nope + self.rope).transpose(1, 2)
        q_nope, q_rot = torch.split(q, [self.nope, self.rope], dim=-1)
        compressed = self.kv_a_proj_with_mqa(hidden_states)
        latent, rope_key = torch.split(compressed, [self.rank, self.rope], dim=-1)
        latent = self.kv_a_layernorm(latent).view(b, 1, s, self.rank)
        rope_key = rope_key.view(b, 1, s, self.rope)
        cos, sin = position_embeddings
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q_rot = q_rot * cos + rotate_half(q_rot) * sin
        rope_key = rope_key * cos + rotate_half(rope_key) * sin
        if past_key_values is not None:
            latent, rope_key = past_key_values.update(latent, rope_key, self.layer_idx)
        query = torch.cat((q_nope, q_rot), dim=-1)
        keys, values = self.keys_and_values(latent, rope_key)
        scores = torch.matmul(query, keys.transpose(2, 3)) * self.scaling
        if attention_mask is not None:
            scores = scores + attention_mask
        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
        out = torch.matmul(probs, values).transpose(1, 2).reshape(b, s, -1)
        return self.o_proj(out)


class Mlp(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.input_layernorm = Norm(config.hidden_size)
        self.self_attn = LatentAttention(config, layer_idx)
        self.post_attention_layernorm = Norm(config.hidden_size)
        self.mlp = Mlp(config)

    def forward(self, hidden_states, position_embeddings, attention_mask=None, past_key_values=None):
        residual = hidden_states
        hidden_states = self.self_attn(self.input_layernorm(hidden_states), position_embeddings, attention_mask,
                                       past_key_values)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.mlp(self.post_attention_layernorm(hidden_states))
        return residual + hidden_states


class LatentModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([Layer(config, i) for i in range(config.num_hidden_layers)])
        self.norm = Norm(config.hidden_size)

    def forward(self, input_ids, position_embeddings, attention_mask=None, past_key_values=None):
        hidden_states = self.embed_tokens(input_ids)
        for layer in self.layers:
            hidden_states = layer(hidden_states, position_embeddings, attention_mask, past_key_values)
        return self.norm(hidden_states)


class LatentForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model = LatentModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, input_ids, position_embeddings, attention_mask=None, past_key_values=None):
        return self.lm_head(self.model(input_ids, position_embeddings, attention_mask, past_key_values))
