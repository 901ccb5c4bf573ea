# MPT-style attention: an ALiBi bias the backbone builds is added to the scores,
# and the causal/padding mask is applied with masked_fill.
import math

import torch
import torch.nn as nn


def make_alibi(num_heads, length, max_bias=8):
    slopes = torch.tensor([2 ** (-max_bias * (h + 1) / num_heads) for h in range(num_heads)])
    distance = torch.arange(1 - length, 1).view(1, 1, length)
    return slopes.view(num_heads, 1, 1) * distance


class BiasedAttention(nn.Module):
    def __init__(self, hidden_size=256, num_heads=4):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.softmax_scale = 1 / math.sqrt(self.head_dim)
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size, bias=False)
        self.out_proj = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(self, hidden_states, position_bias, attention_mask=None):
        b, s, _ = hidden_states.shape
        q, k, v = self.qkv(hidden_states).chunk(3, dim=2)
        q = q.reshape(b, s, self.num_heads, self.head_dim).transpose(1, 2)
        k = k.reshape(b, s, self.num_heads, self.head_dim).transpose(1, 2)
        v = v.reshape(b, s, self.num_heads, self.head_dim).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.softmax_scale
        if position_bias is not None:
            scores = scores + position_bias[:, -s:, -k.shape[-2]:]
        if attention_mask is not None:
            scores = scores.masked_fill(attention_mask, torch.finfo(q.dtype).min)
        probs = nn.functional.softmax(scores.float(), dim=-1).to(v.dtype)
        out = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous().view(b, s, -1)
        return self.out_proj(out)
