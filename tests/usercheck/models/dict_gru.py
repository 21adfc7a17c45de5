"""A dict in, a dataclass out: features and a mask as a dict, a GRU, a straight-through estimator
(a custom autograd.Function that rounds forward and passes gradients unchanged) and a prediction
returned as a dataclass."""
import dataclasses

import torch
from torch import nn


class StraightThroughRound(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


@dataclasses.dataclass
class Prediction:
    scores: torch.Tensor
    codes: torch.Tensor


class DictGru(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(5, 8)
        self.gru = nn.GRU(8, 8, batch_first=True)
        self.head = nn.Linear(8, 3)

    def forward(self, inputs):
        x = torch.tanh(self.proj(inputs["features"])) * inputs["mask"].unsqueeze(-1)
        states, _ = self.gru(x)
        codes = StraightThroughRound.apply(states * 4) / 4
        return Prediction(scores=self.head(codes.mean(1)), codes=codes)


def build():
    torch.manual_seed(0)
    return DictGru()


def batch(size):
    mask = torch.ones(size, 6)
    mask[0, 4:] = 0  # the first sequence is padded
    return ({"features": torch.randn(size, 6, 5), "mask": mask},)


def loss(outputs):
    return outputs.scores.pow(2).mean() + 0.1 * outputs.codes.mean()
