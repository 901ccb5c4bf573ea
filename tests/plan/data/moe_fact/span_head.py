# A question-answering head that keeps its best start positions: softmax then
# top-k, the same ops as an MoE router, but nothing routes to experts.
import torch
import torch.nn as nn
import torch.nn.functional as F


class SpanScorer(nn.Module):
    def __init__(self, hidden, keep):
        super().__init__()
        self.score = nn.Linear(hidden, 1)
        self.keep = keep

    def forward(self, hidden_states):
        start_logits = self.score(hidden_states).squeeze(-1)
        start_probs = F.softmax(start_logits, dim=-1)
        best_probs, best_index = torch.topk(start_probs, self.keep, dim=-1)
        picked = torch.gather(hidden_states, 1, best_index.unsqueeze(-1).expand(-1, -1, hidden_states.size(-1)))
        return best_probs, picked
