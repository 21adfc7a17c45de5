"""Float64 inputs each gradient rule is checked on (as OpInfo's sample_inputs), declared beside the rule.

A rule registers its samples with itself (``@gradient_rule("CumSum", samples=(...))``) so that one test over
``supported_ops()`` reaches every rule, and a rule without samples is noticed (tests/reference/autodiff/
test_rule_samples.py). Arguments are drawn from a ``torch.Generator`` when the test asks, never at import,
so every run draws the same tensors.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import torch

# One argument of a sample: drawn from the test's generator.
Draw = Callable[[torch.Generator], torch.Tensor]
F64, F32 = torch.float64, torch.float32  # F32: ops onnxruntime's CPU kernels lack float64 for


@dataclass(frozen=True)
class Sample:
    """``fn`` over the drawn ``args`` exports to the rule's op; ``wrt`` are the argument indices
    differentiated; each of ``more`` draws the arguments again at other sizes (same ranks), so no size
    may be baked into the gradient graph."""

    fn: Callable[..., object]
    args: tuple[Draw, ...]
    wrt: tuple[int, ...] = (0,)
    more: tuple[tuple[Draw, ...], ...] = ()
    name: str = ""

    def draw(self, seed: int = 0) -> tuple[list[torch.Tensor], list[list[torch.Tensor]]]:
        """The arguments, then each ``more``'s, drawn in order from one generator seeded ``seed``."""
        generator = torch.Generator().manual_seed(seed)
        return [d(generator) for d in self.args], [[d(generator) for d in more] for more in self.more]


def normal(*shape: int, scale: float = 1.0, shift: float = 0.0, dtype: torch.dtype = F64) -> Draw:
    return lambda g: torch.randn(shape, generator=g, dtype=dtype) * scale + shift


def positive(*shape: int, low: float = 0.5, high: float = 1.5, dtype: torch.dtype = F64) -> Draw:
    """Uniform in [low, high): the domain of Sqrt, Log, Reciprocal and a Pow base."""
    return lambda g: torch.rand(shape, generator=g, dtype=dtype) * (high - low) + low


def away_from_zero(*shape: int, gap: float = 0.2, scale: float = 1.0, dtype: torch.dtype = F64) -> Draw:
    """Either sign, |x| >= gap: no input sits on the kink at 0 (Abs, Relu, the ELUs...)."""
    def draw(g):
        x = torch.randn(shape, generator=g, dtype=dtype)
        return (torch.sign(x) * (x.abs() + gap)) * scale
    return draw


def distinct(*shape: int, spacing: float = 0.25, dtype: torch.dtype = F64) -> Draw:
    """All values different, ``spacing`` apart at least in a shuffled order: no ties for Max, MaxPool, TopK."""
    def draw(g):
        n = math.prod(shape)
        ranks = torch.randperm(n, generator=g).to(dtype)
        jitter = torch.rand(n, generator=g, dtype=dtype) * spacing * 0.5
        return ((ranks - n / 2) * spacing + jitter).reshape(shape)
    return draw


def fixed(values: Sequence, dtype: torch.dtype = torch.int64) -> Draw:
    """Given values: indices, labels."""
    return lambda g: torch.tensor(values, dtype=dtype)
