# GPT-J / CodeGen style attention: heads split and merged with permute(0, 2, 1, 3)
# rather than transpose(1, 2), the scores divided by a stored sqrt(head_dim) in
# float32, an optional additive mask.
import torch
import torch.nn as nn


class PermuteAttention(nn.Module):
    def __init__(self, hidden_size=256, num_heads=4):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.scale = torch.sqrt(torch.tensor(self.head_dim, dtype=torch.float32))
        self.q_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.k_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.v_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.out_proj = nn.Linear(hidden_size, hidden_size, bias=False)

    def split(self, x):
        return x.view(x.size()[:-1] + (self.num_heads, self.head_dim)).permute(0, 2, 1, 3)

    def merge(self, x):
        x = x.permute(0, 2, 1, 3).contiguous()
        return x.view(x.size()[:-2] + (self.num_heads * self.head_dim,))

    def scores_to_output(self, q, k, v, mask=None):
        q = q.to(torch.float32)
        k = k.to(torch.float32)
        w = torch.matmul(q, k.transpose(-1, -2)) / self.scale
        if mask is not None:
            w = w + mask
        w = nn.functional.softmax(w, dim=-1).to(v.dtype)
        return torch.matmul(w, v)

    def forward(self, hidden_states, mask=None):
        q = self.split(self.q_proj(hidden_states))
        k = self.split(self.k_proj(hidden_states))
        v = self.split(self.v_proj(hidden_states))
        out = self.merge(self.scores_to_output(q, k, v, mask))
        return self.out_proj(out)
