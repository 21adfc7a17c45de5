"""Modules whose forward treats an axis of size 1 apart, as real code does: a trace at size 1 bakes
that in (a suite checks each pipeline against them; the reference's tests reuse them)."""
from __future__ import annotations

import torch

FEATURES = 4


class RowsLikePositions(torch.nn.Module):
    """transformers' packed-sequence check (llama, mixtral): one row of positions, expanded where the
    batch has more (``if batch_size != position_ids.shape[0]``), then indexed per row; a graph traced
    at batch 1 keeps one row and gathers out of its bounds at batch 3."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.linspace(0.5, 1.5, FEATURES))

    def forward(self, x):
        positions = torch.arange(x.shape[1], dtype=x.dtype, device=x.device).unsqueeze(0)
        if positions.shape[0] != x.shape[0]:
            positions = positions.expand(x.shape[0], -1)
        return x * self.weight * positions[torch.arange(x.shape[0], device=x.device)]


class ScalesASingleRow(torch.nn.Module):
    """Silently wrong instead: code for ``size == 1`` (a single sample handled apart) that a graph
    traced at one size keeps for the other."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.linspace(0.5, 1.5, FEATURES))

    def forward(self, x):
        return x * self.weight * (2.0 if x.shape[0] == 1 else 3.0)


MODULES = {"rows_like_positions": RowsLikePositions, "scales_a_single_row": ScalesASingleRow}
