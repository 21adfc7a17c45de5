"""What a user does to a wrapped module between and during forward calls, as small values.

Each action is a frozen dataclass whose repr is the Python that rebuilds it and names only what
differs from the default, so a shrunk failing sequence reads as a short script.
"""
from __future__ import annotations

import dataclasses


class _ReadableRepr:
    _omit_defaults = False  # Forward: name only what changes

    def __repr__(self) -> str:
        shown = [f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)
                 if not (self._omit_defaults and getattr(self, f.name) == f.default)]
        return f"{type(self).__name__}({', '.join(shown)})"


@dataclasses.dataclass(frozen=True, repr=False)
class Forward(_ReadableRepr):
    """A forward call. ``sizes='other'`` moves to the next batch sizes; a non-None field changes that
    input from now on (structure: rank, dtype, with_y; Python values: flag, reduction, repeats, factor).
    ``seed`` picks the input values (and the cotangent of a following ``Step``): carried by the
    action, not by its position, so shrinking can drop other actions without changing the data."""

    _omit_defaults = True

    sizes: str = "same"      # "same" | "other"
    seed: int = 0
    no_grad: bool = False    # run under torch.no_grad()
    rank: int | None = None  # of x: 2 or 3
    dtype: str | None = None  # of x: "float32" | "float16"
    with_y: bool | None = None
    flag: bool | None = None
    reduction: str | None = None  # "none" | "sum" | "mean"
    repeats: int | None = None
    factor: int | float | None = None  # multiplied into the output: graph arithmetic
    autocast: str | None = None  # torch.autocast from now on: "off" | "float16" | "bfloat16"

    def __post_init__(self):
        if self.sizes not in ("same", "other"):
            raise ValueError(f"sizes must be 'same' or 'other', got {self.sizes!r}")
        if self.autocast not in (None, "off", "float16", "bfloat16"):
            raise ValueError(f"autocast must be 'off', 'float16' or 'bfloat16', got {self.autocast!r}")


@dataclasses.dataclass(frozen=True, repr=False)
class Step(_ReadableRepr):
    """Backward from the last forward's outputs (cotangent seeded by that forward), then one SGD step."""


@dataclasses.dataclass(frozen=True, repr=False)
class SetRequiresGrad(_ReadableRepr):
    """From now on, input ``x`` or ``y`` is created with requires_grad=value."""

    input: str = "x"
    value: bool = True


@dataclasses.dataclass(frozen=True, repr=False)
class SetTrainable(_ReadableRepr):
    """Freeze (False) or unfreeze (True) one parameter, by name."""

    param: str = "lin.weight"
    value: bool = True


@dataclasses.dataclass(frozen=True, repr=False)
class SetAttribute(_ReadableRepr):
    """``wrapped.<name> = value`` (and the same on eager): a Python attribute the forward reads."""

    name: str = "gain"
    value: float = 1.0


@dataclasses.dataclass(frozen=True, repr=False)
class SetMode(_ReadableRepr):
    """``train()`` (True) or ``eval()`` (False)."""

    training: bool = True


@dataclasses.dataclass(frozen=True, repr=False)
class MoveTo(_ReadableRepr):
    """``.to(device)`` on the wrapped and the eager module; later inputs are created there. A move to
    another device leaves no forward to ``Step`` from (its graph is on the old device)."""

    device: str = "cpu"


@dataclasses.dataclass(frozen=True, repr=False)
class SetMemoryOptimizer(_ReadableRepr):
    """Change the wrapped module's memory-optimizer level (``Implementation.reconfigure``)."""

    level: int = 1


ACTIONS = (Forward, Step, SetRequiresGrad, SetTrainable, SetAttribute, SetMode, MoveTo, SetMemoryOptimizer)
