"""Small seeded models that must be rebuilt by name in other processes (DDP ranks): module-level
builders, so a ``functools.partial`` of them pickles."""
from __future__ import annotations

import torch
from torch import nn

from ortcheck.models.seeding import build_seeded


class MLPWithUnused(nn.Module):
    """Linear -> LayerNorm -> tanh -> Linear, plus (``unused=True``) a Linear forward never calls:
    the parameter DDP's ``find_unused_parameters`` exists for."""

    def __init__(self, width: int, hidden: int, outputs: int, unused: bool = False):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(width, hidden), nn.LayerNorm(hidden), nn.Tanh(), nn.Linear(hidden, outputs))
        self.unused = nn.Linear(hidden, hidden) if unused else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def mlp_with_unused(width: int, hidden: int, outputs: int, unused: bool = False, seed: int = 0) -> MLPWithUnused:
    return build_seeded(lambda: MLPWithUnused(width, hidden, outputs, unused), seed)
