"""The module every action sequence drives, and the inputs it is called with.

Small on purpose (an export costs milliseconds), yet everything a transition is about changes its
output: the input structure, each Python value, the mode (``if self.training``), a Python
attribute (``self.gain``), and each parameter. A pipeline that reuses a stale graph computes
something else, and eager PyTorch shows it.
"""
from __future__ import annotations

import dataclasses

import torch

from ortcheck.strategies.transitions.actions import Forward

FEATURES = 4
OUTPUTS = 3
# Leading sizes, cycled by Forward(sizes="other"): (batch,) for rank 2, (batch, seq) for rank 3.
LEADING_SIZES = ((2, 3), (3, 1), (1, 2), (4, 2))
DTYPES = {"float32": torch.float32, "float16": torch.float16}  # x is cast to float32 on entry


class TransitionSubject(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(FEATURES, OUTPUTS)
        self.scale = torch.nn.Parameter(torch.tensor([1.0, -0.5, 2.0]))
        self.gain = 1.0

    def forward(self, x, y=None, *, flag=None, reduction=None, repeats=None):
        h = self.lin(x.to(self.lin.weight.dtype)) * self.scale * self.gain
        h = h * (0.5 if self.training else 2.0)
        if y is not None:
            h = h + y
        if flag:
            h = torch.tanh(h)
        for _ in range(repeats or 0):  # a Python int the trace unrolls
            h = h * 1.5 + 0.25
        if reduction == "sum":
            return h.sum(-1)
        if reduction == "mean":
            return h.mean(-1)
        return h


PARAMETERS = ("lin.weight", "lin.bias", "scale")


@dataclasses.dataclass(frozen=True)
class Inputs:
    """What the next forward is called with (sizes aside, which only pick values)."""

    rank: int = 2
    dtype: str = "float32"
    with_y: bool = True
    flag: bool | None = None
    reduction: str | None = None
    repeats: int | None = None
    x_requires_grad: bool = True
    y_requires_grad: bool = False
    sizes: int = 0  # index into LEADING_SIZES

    def after(self, action: Forward) -> "Inputs":
        changes = {name: getattr(action, name) for name in ("rank", "dtype", "with_y", "flag", "reduction", "repeats")
                   if getattr(action, name) is not None}
        if action.sizes == "other":
            changes["sizes"] = (self.sizes + 1) % len(LEADING_SIZES)
        return dataclasses.replace(self, **changes)

    def make(self, seed: int, device: str) -> tuple[tuple, dict]:
        """(args, kwargs) for the forward; values depend only on ``seed``, so replays are exact."""
        generator = torch.Generator().manual_seed(seed)
        leading = LEADING_SIZES[self.sizes][: self.rank - 1]
        x = torch.randn(*leading, FEATURES, generator=generator, dtype=DTYPES[self.dtype])
        args = [x.to(device).requires_grad_(self.x_requires_grad)]
        if self.with_y:
            y = torch.randn(*leading, OUTPUTS, generator=generator)
            args.append(y.to(device).requires_grad_(self.y_requires_grad))
        kwargs = {name: getattr(self, name) for name in ("flag", "reduction", "repeats") if getattr(self, name) is not None}
        return tuple(args), kwargs


def fresh_copy(args: tuple) -> tuple:
    """Same values, new leaf tensors: eager and wrapped runs must not share gradients."""
    return tuple(t.detach().clone().requires_grad_(t.requires_grad) for t in args)
