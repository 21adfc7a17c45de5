"""What the next forward of a transition sequence is called with, as the user sets it up."""
from __future__ import annotations

import dataclasses

import torch

from ortcheck.models.transition_subject import FEATURES, OUTPUTS
from ortcheck.strategies.transitions.actions import Forward

# Leading sizes, cycled by Forward(sizes="other"): (batch,) for rank 2, (batch, seq) for rank 3.
LEADING_SIZES = ((2, 3), (3, 1), (1, 2), (4, 2))
DTYPES = {"float32": torch.float32, "float16": torch.float16}  # the subject casts x to its own dtype
PYTHON_VALUES = ("flag", "reduction", "repeats", "factor")


@dataclasses.dataclass(frozen=True)
class Inputs:
    """The structure and Python values of the next call (sizes only pick values and shapes)."""

    rank: int = 2
    dtype: str = "float32"
    with_y: bool = True
    flag: bool | None = None
    reduction: str | None = None
    repeats: int | None = None
    factor: int | float | None = None
    x_requires_grad: bool = True
    y_requires_grad: bool = False
    sizes: int = 0  # index into LEADING_SIZES

    def after(self, action: Forward) -> "Inputs":
        changes = {name: getattr(action, name) for name in ("rank", "dtype", "with_y", *PYTHON_VALUES)
                   if getattr(action, name) is not None}
        if action.sizes == "other":
            changes["sizes"] = (self.sizes + 1) % len(LEADING_SIZES)
        return dataclasses.replace(self, **changes)

    @property
    def signature(self) -> tuple:
        """Everything about the call a trace bakes in: structure, dtypes, ranks, Python values with their
        types (``3`` and ``3.0`` trace to different constants, yet compare equal; never sizes)."""
        return (self.rank, self.dtype, self.with_y, *((name, type(value).__name__, value) for name in PYTHON_VALUES
                                                      if (value := getattr(self, name)) is not None))

    @property
    def requiring_grad(self) -> tuple[bool, ...]:
        return (self.x_requires_grad, self.y_requires_grad) if self.with_y else (self.x_requires_grad,)

    def make(self, seed: int, device: str) -> tuple[tuple, dict]:
        """(args, kwargs) for the forward; values depend only on ``seed``, so replays are exact."""
        generator = torch.Generator().manual_seed(seed)
        leading = LEADING_SIZES[self.sizes][: self.rank - 1]
        x = torch.randn(*leading, FEATURES, generator=generator, dtype=DTYPES[self.dtype])
        args = [x.to(device).requires_grad_(self.x_requires_grad)]
        if self.with_y:
            y = torch.randn(*leading, OUTPUTS, generator=generator)
            args.append(y.to(device).requires_grad_(self.y_requires_grad))
        kwargs = {name: getattr(self, name) for name in PYTHON_VALUES if getattr(self, name) is not None}
        return tuple(args), kwargs
