"""A model whose Python code reads sizes, as people write it: flatten with view(x.size(0), -1),
positions from torch.arange(x.shape[1]), and a loss averaged by dividing by the batch size."""
import torch
from torch import nn


class SizeDependent(nn.Module):
    def __init__(self):
        super().__init__()
        self.position = nn.Embedding(16, 6)
        self.mix = nn.Linear(6, 6)
        self.head = nn.Linear(4 * 6, 2)

    def forward(self, x):
        x = x + self.position(torch.arange(x.shape[1], device=x.device))
        x = torch.tanh(self.mix(x))
        logits = self.head(x.view(x.size(0), -1))
        return logits.pow(2).sum() / x.shape[0]


def build():
    torch.manual_seed(0)
    return SizeDependent()


def batch(size):
    return (torch.randn(size, 4, 6),)
