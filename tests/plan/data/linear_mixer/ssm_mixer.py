# The same decoder with a state-space decay (A_log) and a plain scan helper.
import torch
import torch.nn.functional as F
from torch import nn
from transformers.activations import ACT2FN


class Mlp(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.up = nn.Linear(config.hidden_size, config.intermediate_size)
        self.down = nn.Linear(config.intermediate_size, config.hidden_size)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))

def l2norm(x, eps=1e-6):
    return x * torch.rsqrt((x * x).sum(dim=-1, keepdim=True) + eps)

def scan(q, k, v, g, beta):
    b, s, d = q.shape
    state = q.new_zeros(b, d, d)
    out = []
    for t in range(s):
        state = state * g[:, t].exp()[:, None, None]
        kv = (state * k[:, t, :, None]).sum(dim=1)
        state = state + k[:, t, :, None] * ((v[:, t] - kv) * beta[:, t, None])[:, None, :]
        out.append((state * q[:, t, :, None]).sum(dim=1))
    return torch.stack(out, dim=1)

class DeltaMixer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.d = config.hidden_size
        self.channels = 3 * config.hidden_size
        self.activation = config.mixer_act
        self.in_proj = nn.Linear(config.hidden_size, self.channels, bias=False)
        self.conv1d = nn.Conv1d(self.channels, self.channels, kernel_size=4, groups=self.channels, padding=3)
        self.A_log = nn.Parameter(torch.zeros(1))
        self.gate = nn.Linear(config.hidden_size, 1)
        self.beta = nn.Linear(config.hidden_size, 1)
        self.out_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)

    def forward(self, x):
        s = x.shape[1]
        mixed = self.conv1d(self.in_proj(x).transpose(1, 2))[..., :s]
        q, k, v = ACT2FN[self.activation](mixed).transpose(1, 2).split(self.d, dim=-1)
        g = -self.A_log.exp() * F.softplus(self.gate(x)).squeeze(-1)
        beta = torch.sigmoid(self.beta(x)).squeeze(-1)
        out = scan(l2norm(q), l2norm(k), v, g, beta)
        return self.out_proj(out)

class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.norm_1 = nn.LayerNorm(config.hidden_size)
        self.linear_attn = DeltaMixer(config)
        self.norm_2 = nn.LayerNorm(config.hidden_size)
        self.mlp = Mlp(config)

    def forward(self, x):
        x = x + self.linear_attn(self.norm_1(x))
        return x + self.mlp(self.norm_2(x))

class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([Block(config) for _ in range(config.num_hidden_layers)])
        self.norm = nn.LayerNorm(config.hidden_size)
        self.head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x))
