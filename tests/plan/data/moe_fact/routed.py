# A small routed MoE: the same softmax and top-k, feeding a loop over experts.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, hidden, inner):
        super().__init__()
        self.up = nn.Linear(hidden, inner, bias=False)
        self.down = nn.Linear(inner, hidden, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.up(x)))


class RoutedBlock(nn.Module):
    def __init__(self, hidden, inner, n_experts, k):
        super().__init__()
        self.gate = nn.Linear(hidden, n_experts, bias=False)
        self.experts = nn.ModuleList([Expert(hidden, inner) for _ in range(n_experts)])
        self.top_k = k
        self.num_experts = n_experts

    def forward(self, x):
        router_logits = self.gate(x)
        probs = F.softmax(router_logits, dim=-1, dtype=torch.float)
        weights, chosen = torch.topk(probs, self.top_k, dim=-1)
        out = torch.zeros_like(x)
        hit = F.one_hot(chosen, num_classes=self.num_experts).permute(2, 1, 0)
        for e in range(self.num_experts):
            slot, token = torch.where(hit[e])
            out.index_add_(0, token, self.experts[e](x[token]) * weights[token, slot, None])
        return out
