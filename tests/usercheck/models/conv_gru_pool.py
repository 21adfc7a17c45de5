"""An audio-style classifier: a Conv1d front end, LayerNorm, a bidirectional GRU and attention
pooling over time (a learned query scoring each step), as in keyword spotting."""
import torch
from torch import nn


class AttentionPool(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.score = nn.Linear(dim, 1)

    def forward(self, x):
        weights = torch.softmax(self.score(x).squeeze(-1), dim=1)
        return torch.einsum("bt,btd->bd", weights, x)


class ConvGruPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.front = nn.Sequential(nn.Conv1d(4, 8, 5, stride=2, padding=2), nn.GELU())
        self.norm = nn.LayerNorm(8)
        self.gru = nn.GRU(8, 6, batch_first=True, bidirectional=True)
        self.pool = AttentionPool(12)
        self.head = nn.Linear(12, 3)

    def forward(self, waves):
        x = self.norm(self.front(waves).transpose(1, 2))
        x, _ = self.gru(x)
        return self.head(self.pool(x))


def build():
    torch.manual_seed(0)
    return ConvGruPool()


def batch(size):
    return (torch.randn(size, 4, 16),)
