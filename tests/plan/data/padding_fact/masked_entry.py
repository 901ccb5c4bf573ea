"""A small decoder whose entry forward takes an attention mask from the caller, as
HF models do: a padded batch may reach its attention."""
import math

import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)

    def forward(self, x, mask):
        b, s, _ = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        scores = scores + mask
        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        return self.out(torch.matmul(probs, v).transpose(1, 2).reshape(b, s, -1))


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = Attention(dim, heads)
        self.ln = nn.LayerNorm(dim)

    def forward(self, x, mask):
        return x + self.attn(self.ln(x), mask)


class TinyLM(nn.Module):
    def __init__(self, vocab=64, dim=64, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([Block(dim, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, input_ids, attention_mask=None):
        s = input_ids.shape[1]
        mask = torch.full((s, s), float("-inf")).triu(1)
        if attention_mask is not None:
            mask = mask + (1.0 - attention_mask[:, None, None, :].float()) * -1e9
        h = self.embed(input_ids)
        for layer in self.layers:
            h = layer(h, mask)
        return self.head(self.norm(h))
