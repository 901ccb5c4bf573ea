"""A Qwen2-family decoder written the way serving engines write models.

* Tokens of all sequences are flattened to [num_tokens, hidden]; positions are
  given per token.
* Merged projections: one qkv_proj (Q, K, V shards side by side) and one
  gate_up_proj ([gate, up]); load_weights() shows how separate checkpoint
  tensors are copied into the merged parameters.
* Linear layers return (output, bias) pairs and carry tensor-parallel hints:
  the row-parallel layer all-reduces across ranks when tp_size > 1.
* Paged KV cache: per layer a key_cache and value_cache of shape
  [num_blocks, block_size, kv_heads, head_dim]; each new token is written to
  the slot given by slot_mapping; decode reads its blocks through block_tables.
* The norm takes an optional residual and returns (normed, new_residual).
"""
from dataclasses import dataclass, fields
from typing import Iterable, List, Optional, Tuple

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

KVCache = Tuple[torch.Tensor, torch.Tensor]


@dataclass
class Qwen2StyleConfig:
    vocab_size: int = 152064
    hidden_size: int = 3584
    intermediate_size: int = 18944
    num_hidden_layers: int = 28
    num_attention_heads: int = 28
    num_key_value_heads: int = 4
    rms_norm_eps: float = 1e-6
    rope_theta: float = 1000000.0
    max_position_embeddings: int = 32768
    block_size: int = 128
    tie_word_embeddings: bool = False
    torch_dtype: str = "bfloat16"


def parse_config(values: dict) -> Qwen2StyleConfig:
    names = {f.name for f in fields(Qwen2StyleConfig)}
    return Qwen2StyleConfig(**{k: v for k, v in values.items() if k in names})


def get_tensor_model_parallel_world_size() -> int:
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return 1


@dataclass
class AttentionMetadata:
    """Batch layout: the first num_prefills sequences are prefills, the rest decode one token each."""
    num_prefills: int
    num_prefill_tokens: int
    num_decode_tokens: int
    slot_mapping: torch.Tensor      # [num_tokens] flat cache slot of each new token, -1 = padding
    query_start_loc: torch.Tensor   # [num_prefills + 1] cumulative prefill query lengths
    seq_lens: List[int]             # per sequence: tokens in the cache after this step
    block_tables: torch.Tensor      # [num_seqs, max_blocks_per_seq]

    @property
    def is_prefill(self) -> bool:
        return self.num_decode_tokens == 0


class ColumnParallelLinear(nn.Module):
    def __init__(self, input_size: int, output_size: int, bias: bool = False):
        super().__init__()
        self.tp_size = get_tensor_model_parallel_world_size()
        self.output_size_per_partition = output_size // self.tp_size
        self.weight = nn.Parameter(torch.randn(self.output_size_per_partition, input_size) * input_size ** -0.5)
        self.bias = nn.Parameter(torch.randn(self.output_size_per_partition) * 0.02) if bias else None

    def forward(self, x):
        return F.linear(x, self.weight, self.bias), None


class MergedColumnParallelLinear(ColumnParallelLinear):
    """Several column-parallel outputs stored in one weight, e.g. [gate; up]."""

    def __init__(self, input_size: int, output_sizes: List[int], bias: bool = False):
        super().__init__(input_size, sum(output_sizes), bias)
        self.output_sizes = output_sizes

    def weight_loader(self, param: nn.Parameter, loaded: torch.Tensor, shard_id: int):
        offset = sum(self.output_sizes[:shard_id]) // self.tp_size
        size = self.output_sizes[shard_id] // self.tp_size
        param.data[offset : offset + size].copy_(loaded)


class QKVParallelLinear(ColumnParallelLinear):
    def __init__(self, hidden_size: int, head_size: int, total_num_heads: int, total_num_kv_heads: int, bias=True):
        super().__init__(hidden_size, (total_num_heads + 2 * total_num_kv_heads) * head_size, bias)
        self.head_size = head_size
        self.num_heads = total_num_heads // self.tp_size
        self.num_kv_heads = max(1, total_num_kv_heads // self.tp_size)

    def weight_loader(self, param: nn.Parameter, loaded: torch.Tensor, shard_id: str):
        q_size = self.num_heads * self.head_size
        kv_size = self.num_kv_heads * self.head_size
        offset, size = {"q": (0, q_size), "k": (q_size, kv_size), "v": (q_size + kv_size, kv_size)}[shard_id]
        param.data[offset : offset + size].copy_(loaded)


class RowParallelLinear(nn.Module):
    def __init__(self, input_size: int, output_size: int, bias: bool = False):
        super().__init__()
        self.tp_size = get_tensor_model_parallel_world_size()
        self.input_size_per_partition = input_size // self.tp_size
        self.weight = nn.Parameter(torch.randn(output_size, self.input_size_per_partition) * input_size ** -0.5)
        self.bias = nn.Parameter(torch.zeros(output_size)) if bias else None

    def forward(self, x):
        out = F.linear(x, self.weight)
        if self.tp_size > 1:
            dist.all_reduce(out)  # sum the partial products of every rank's input slice
        if self.bias is not None:
            out = out + self.bias
        return out, None


class RMSNorm(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, x: torch.Tensor, residual: Optional[torch.Tensor] = None):
        orig_dtype = x.dtype
        x = x.to(torch.float32)
        if residual is not None:
            x = x + residual.to(torch.float32)
            residual = x.to(orig_dtype)
        variance = x.pow(2).mean(dim=-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.variance_epsilon)
        x = x.to(orig_dtype) * self.weight
        return x if residual is None else (x, residual)


class SiluAndMul(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1] // 2
        return F.silu(x[..., :d]) * x[..., d:]


class RotaryEmbedding(nn.Module):
    """Neox-style rotation with a precomputed [max_position, head_dim] cos|sin cache."""

    def __init__(self, head_size: int, max_position: int, base: float):
        super().__init__()
        self.head_size = head_size
        inv_freq = 1.0 / (base ** (torch.arange(0, head_size, 2, dtype=torch.float) / head_size))
        freqs = torch.einsum("i,j->ij", torch.arange(max_position, dtype=torch.float), inv_freq)
        self.register_buffer("cos_sin_cache", torch.cat((freqs.cos(), freqs.sin()), dim=-1), persistent=False)

    def _rotate(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x1, x2 = torch.chunk(x, 2, dim=-1)
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    def forward(self, positions, query, key):
        cos, sin = self.cos_sin_cache.index_select(0, positions).chunk(2, dim=-1)
        cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)
        num_tokens = positions.shape[0]
        query = self._rotate(query.view(num_tokens, -1, self.head_size), cos, sin).reshape(num_tokens, -1)
        key = self._rotate(key.view(num_tokens, -1, self.head_size), cos, sin).reshape(num_tokens, -1)
        return query, key


def write_to_paged_cache(key, value, key_cache, value_cache, slot_mapping):
    valid = slot_mapping >= 0
    slots = slot_mapping[valid]
    block_size = key_cache.shape[1]
    key_cache[slots // block_size, slots % block_size] = key[valid]
    value_cache[slots // block_size, slots % block_size] = value[valid]


def causal_attention(q, k, v, scale):
    """q: [s, heads, d], k/v: [s, kv_heads, d] of one sequence."""
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    scores = torch.einsum("qhd,khd->hqk", q, k) * scale
    s = q.shape[0]
    scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
    return torch.einsum("hqk,khd->qhd", scores.softmax(dim=-1), v)


class PagedAttention(nn.Module):
    def __init__(self, num_heads: int, head_size: int, scale: float, num_kv_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.head_size = head_size
        self.scale = scale
        self.num_kv_heads = num_kv_heads

    def forward(self, query, key, value, kv_cache: KVCache, attn_metadata: AttentionMetadata):
        q = query.view(-1, self.num_heads, self.head_size)
        k = key.view(-1, self.num_kv_heads, self.head_size)
        v = value.view(-1, self.num_kv_heads, self.head_size)
        key_cache, value_cache = kv_cache
        write_to_paged_cache(k, v, key_cache, value_cache, attn_metadata.slot_mapping)

        output = torch.empty_like(q)
        n_prefill = attn_metadata.num_prefill_tokens
        if attn_metadata.num_prefills > 0:
            # Prefill: each prompt attends over its own fresh keys, causally.
            starts = attn_metadata.query_start_loc.tolist()
            for begin, end in zip(starts[:-1], starts[1:]):
                output[begin:end] = causal_attention(q[begin:end], k[begin:end], v[begin:end], self.scale)
        if attn_metadata.num_decode_tokens > 0:
            output[n_prefill:] = self.decode(q[n_prefill:], key_cache, value_cache, attn_metadata)
        return output.view(-1, self.num_heads * self.head_size)

    def decode(self, q, key_cache, value_cache, meta: AttentionMetadata):
        block_size = key_cache.shape[1]
        group = self.num_heads // self.num_kv_heads
        outputs = []
        for i in range(q.shape[0]):
            seq_idx = meta.num_prefills + i
            seq_len = meta.seq_lens[seq_idx]
            blocks = meta.block_tables[seq_idx, : (seq_len + block_size - 1) // block_size]
            k = key_cache[blocks].reshape(-1, self.num_kv_heads, self.head_size)[:seq_len]
            v = value_cache[blocks].reshape(-1, self.num_kv_heads, self.head_size)[:seq_len]
            qi = q[i].view(self.num_kv_heads, group, self.head_size)
            scores = torch.einsum("hgd,khd->hgk", qi, k) * self.scale
            outputs.append(torch.einsum("hgk,khd->hgd", scores.softmax(dim=-1), v).reshape(self.num_heads, -1))
        return torch.stack(outputs)


class Qwen2Attention(nn.Module):
    def __init__(self, config: Qwen2StyleConfig):
        super().__init__()
        tp_size = get_tensor_model_parallel_world_size()
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.num_heads = config.num_attention_heads // tp_size
        self.num_kv_heads = max(1, config.num_key_value_heads // tp_size)
        self.q_size = self.num_heads * self.head_dim
        self.kv_size = self.num_kv_heads * self.head_dim
        self.qkv_proj = QKVParallelLinear(
            config.hidden_size, self.head_dim, config.num_attention_heads, config.num_key_value_heads, bias=True
        )
        self.o_proj = RowParallelLinear(config.num_attention_heads * self.head_dim, config.hidden_size)
        self.rotary_emb = RotaryEmbedding(self.head_dim, config.max_position_embeddings, config.rope_theta)
        self.attn = PagedAttention(self.num_heads, self.head_dim, self.head_dim ** -0.5, self.num_kv_heads)

    def forward(self, positions, hidden_states, kv_cache: KVCache, attn_metadata: AttentionMetadata):
        qkv, _ = self.qkv_proj(hidden_states)
        q, k, v = qkv.split([self.q_size, self.kv_size, self.kv_size], dim=-1)
        q, k = self.rotary_emb(positions, q, k)
        attn_output = self.attn(q, k, v, kv_cache, attn_metadata)
        output, _ = self.o_proj(attn_output)
        return output


class Qwen2MLP(nn.Module):
    def __init__(self, config: Qwen2StyleConfig):
        super().__init__()
        self.gate_up_proj = MergedColumnParallelLinear(config.hidden_size, [config.intermediate_size] * 2)
        self.down_proj = RowParallelLinear(config.intermediate_size, config.hidden_size)
        self.act_fn = SiluAndMul()

    def forward(self, x):
        gate_up, _ = self.gate_up_proj(x)
        x, _ = self.down_proj(self.act_fn(gate_up))
        return x


class Qwen2DecoderLayer(nn.Module):
    def __init__(self, config: Qwen2StyleConfig):
        super().__init__()
        self.self_attn = Qwen2Attention(config)
        self.mlp = Qwen2MLP(config)
        self.input_layernorm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, positions, hidden_states, kv_cache, attn_metadata, residual: Optional[torch.Tensor]):
        if residual is None:
            residual = hidden_states
            hidden_states = self.input_layernorm(hidden_states)
        else:
            hidden_states, residual = self.input_layernorm(hidden_states, residual)
        hidden_states = self.self_attn(positions, hidden_states, kv_cache, attn_metadata)
        hidden_states, residual = self.post_attention_layernorm(hidden_states, residual)
        hidden_states = self.mlp(hidden_states)
        return hidden_states, residual


class Qwen2ForCausalLM(nn.Module):
    def __init__(self, config: Qwen2StyleConfig):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([Qwen2DecoderLayer(config) for _ in range(config.num_hidden_layers)])
        self.norm = RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, input_ids, positions, kv_caches: List[KVCache], attn_metadata: AttentionMetadata):
        hidden_states = self.embed_tokens(input_ids)
        residual = None
        for layer, kv_cache in zip(self.layers, kv_caches):
            hidden_states, residual = layer(positions, hidden_states, kv_cache, attn_metadata, residual)
        hidden_states, _ = self.norm(hidden_states, residual)
        return hidden_states

    def compute_logits(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.lm_head(hidden_states)

    def load_weights(self, weights: Iterable[Tuple[str, torch.Tensor]]):
        # Checkpoints keep q/k/v and gate/up apart; copy each into its shard of the merged parameter.
        stacked = [("qkv_proj", "q_proj", "q"), ("qkv_proj", "k_proj", "k"), ("qkv_proj", "v_proj", "v"),
                   ("gate_up_proj", "gate_proj", 0), ("gate_up_proj", "up_proj", 1)]
        params = dict(self.named_parameters())
        for name, tensor in weights:
            name = name[len("model."):] if name.startswith("model.") else name
            for merged, part, shard in stacked:
                if part in name:
                    target = name.replace(part, merged)
                    module = self.get_submodule(target.rsplit(".", 1)[0])
                    module.weight_loader(params[target], tensor, shard)
                    break
            else:
                params[name].data.copy_(tensor)


def allocate_kv_caches(config: Qwen2StyleConfig, num_blocks: int) -> List[KVCache]:
    head_dim = config.hidden_size // config.num_attention_heads
    shape = (num_blocks, config.block_size, config.num_key_value_heads, head_dim)
    return [(torch.zeros(shape), torch.zeros(shape)) for _ in range(config.num_hidden_layers)]


def build_step(block_tables, context_lens: List[int], new_lens: List[int], block_size: int, num_prefills: int):
    """Positions, slot_mapping and metadata for one engine step over all sequences."""
    positions, slots = [], []
    for seq, (ctx, new) in enumerate(zip(context_lens, new_lens)):
        for pos in range(ctx, ctx + new):
            positions.append(pos)
            slots.append(int(block_tables[seq, pos // block_size]) * block_size + pos % block_size)
    prefill_lens = new_lens[:num_prefills]
    meta = AttentionMetadata(
        num_prefills=num_prefills,
        num_prefill_tokens=sum(prefill_lens),
        num_decode_tokens=sum(new_lens[num_prefills:]),
        slot_mapping=torch.tensor(slots, dtype=torch.long),
        query_start_loc=torch.tensor([0] + prefill_lens, dtype=torch.long).cumsum(0),
        seq_lens=[c + n for c, n in zip(context_lens, new_lens)],
        block_tables=block_tables,
    )
    return torch.tensor(positions, dtype=torch.long), meta


def from_config(values: dict) -> Qwen2ForCausalLM:
    return Qwen2ForCausalLM(parse_config(values))


def _scattered_block_tables(batch: int, blocks_per_seq: int) -> torch.Tensor:
    # Deliberately non-contiguous block ids so a wrong slot computation shows up.
    order = torch.randperm(batch * blocks_per_seq, generator=torch.Generator().manual_seed(7))
    return order.view(batch, blocks_per_seq)


@torch.no_grad()
def full_logits(model: Qwen2ForCausalLM, input_ids: torch.Tensor) -> torch.Tensor:
    batch, total = input_ids.shape
    bs = model.config.block_size
    per_seq = (total + bs - 1) // bs
    tables = _scattered_block_tables(batch, per_seq)
    positions, meta = build_step(tables, [0] * batch, [total] * batch, bs, num_prefills=batch)
    hidden = model(input_ids.reshape(-1), positions, allocate_kv_caches(model.config, batch * per_seq), meta)
    return model.compute_logits(hidden).view(batch, total, -1)


@torch.no_grad()
def incremental_logits(model: Qwen2ForCausalLM, input_ids: torch.Tensor, prompt_len: int) -> torch.Tensor:
    batch, total = input_ids.shape
    bs = model.config.block_size
    per_seq = (total + bs - 1) // bs
    tables = _scattered_block_tables(batch, per_seq)
    caches = allocate_kv_caches(model.config, batch * per_seq)

    positions, meta = build_step(tables, [0] * batch, [prompt_len] * batch, bs, num_prefills=batch)
    hidden = model(input_ids[:, :prompt_len].reshape(-1), positions, caches, meta)
    last = [model.compute_logits(hidden.view(batch, prompt_len, -1)[:, -1])]
    for pos in range(prompt_len, total):
        positions, meta = build_step(tables, [pos] * batch, [1] * batch, bs, num_prefills=0)
        hidden = model(input_ids[:, pos], positions, caches, meta)
        last.append(model.compute_logits(hidden))
    return torch.stack(last, dim=1)
