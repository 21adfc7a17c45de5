"""Drawn values that read as code: a constructor call (`Build`) and seeded inputs (`Input`) kept as
values, so a falsifying example prints as the layer and the inputs that fail."""
from __future__ import annotations

import dataclasses

import torch
from hypothesis import strategies as st
from torch import nn

SIDE = st.integers(1, 4)
BATCH = st.integers(1, 3)


def sides(n: int, low: int = 1, high: int = 4):
    return st.lists(st.integers(low, high), min_size=n, max_size=n)


@dataclasses.dataclass(frozen=True)
class Build:
    """A constructor call kept as a value: built under the example's seed, printed as code."""

    cls: type
    args: tuple = ()
    kwargs: tuple = ()

    def __call__(self):
        def built(value):  # a tensor argument (a class weight) becomes a buffer: each module its own
            if isinstance(value, torch.Tensor):
                return value.clone()
            return value() if isinstance(value, Build) else value

        return self.cls(*map(built, self.args), **{key: built(value) for key, value in self.kwargs})

    def __repr__(self):
        prefix = "nn." if getattr(nn, self.cls.__name__, None) is self.cls else ""
        parts = [*map(repr, self.args), *(f"{key}={value!r}" for key, value in self.kwargs)]
        return f"{prefix}{self.cls.__name__}({', '.join(parts)})"


def make(cls, *args, **kwargs) -> Build:
    return Build(cls, args, tuple(kwargs.items()))


GELU_TAIL = (-5.2, -2.0)  # tanh GELU's 1 + tanh(z) cancels here


def _with_tails(values: torch.Tensor) -> torch.Tensor:
    """``values`` with the first at -16 and the last at 16: where sigmoid-like functions saturate."""
    flat = values.view(-1)
    flat[0], flat[-1] = -16.0, 16.0
    return values


def _mirrored_out_of_gelu_tail(values: torch.Tensor) -> torch.Tensor:
    inside = (values > GELU_TAIL[0]) & (values < GELU_TAIL[1])
    return torch.where(inside, -values, values)


@dataclasses.dataclass(frozen=True)
class Input:
    """One seeded input, printed as ``kind[shape]``. Float kinds require grad: ``float`` (randn),
    ``wide`` (3 x randn, reaching the saturated and linear parts of activations), ``wide_body``
    (``wide`` mirrored out of [-5.2, -2], where tanh GELU's ``1 + tanh`` cancels and float32
    kernels are, at rare points, far less accurate than eager's: a verdict there would depend on
    the seed), ``tails`` (``wide`` with the first value at -16 and the last at 16: where a kernel
    accurate only in absolute terms is relatively wrong, in every draw), ``unit`` (in [0.01, 0.99]), ``positive`` (in [0.1, 1]). The rest don't: ``index:<n>`` (integers in [0, n)),
    ``target:<n>:<ignore>`` (class labels, some of them ``ignore`` but never the first: n > 1 if
    ``ignore`` is a class), ``filled:<v>`` (all v), ``masked`` (bool, True = excluded, never the
    first entry of the last axis), ``allowed`` (bool, True = attended, always the first), ``causal``
    (bool, True above the diagonal), ``offsets:<n>`` / ``offsets_last:<n>`` (EmbeddingBag's bag
    starts in [0, n], the first 0; the latter ending with n), ``sign`` (float ±1, a ranking or
    similarity label), ``labels:<n>`` (integers in [1, n): CTC targets), ``multilabel:<n>`` (per row
    some distinct labels, then -1s)."""

    shape: tuple[int, ...]
    kind: str = "float"

    def make(self, generator: torch.Generator) -> torch.Tensor:
        kind, *args = self.kind.split(":")
        shape = self.shape
        if kind in ("float", "wide", "wide_body", "unit", "positive", "tails"):
            values = {"float": lambda: torch.randn(shape, generator=generator),
                      "wide": lambda: 3 * torch.randn(shape, generator=generator),
                      "tails": lambda: _with_tails(3 * torch.randn(shape, generator=generator)),
                      "wide_body": lambda: _mirrored_out_of_gelu_tail(3 * torch.randn(shape, generator=generator)),
                      "unit": lambda: torch.rand(shape, generator=generator).clamp(0.01, 0.99),
                      "positive": lambda: 0.1 + 0.9 * torch.rand(shape, generator=generator)}[kind]()
            return values.requires_grad_(True)
        if kind == "index":
            return torch.randint(0, int(args[0]), shape, generator=generator)
        if kind == "target":
            labels = torch.randint(0, int(args[0]), shape, generator=generator)
            ignore = int(args[1])
            if labels.view(-1)[0] == ignore:
                labels.view(-1)[0] = (ignore + 1) % int(args[0])
            ignored = torch.rand(shape, generator=generator) < 0.3
            ignored.view(-1)[0] = False
            return torch.where(ignored, torch.full_like(labels, ignore), labels)
        if kind == "labels":  # class labels in [1, n): CTC targets (0 is the blank)
            return torch.randint(1, int(args[0]), shape, generator=generator)
        if kind == "multilabel":  # per row: some distinct labels of [0, n), then -1s
            rows = []
            for _ in range(shape[0]):
                count = int(torch.randint(1, shape[1] + 1, (1,), generator=generator))
                labels = torch.randperm(int(args[0]), generator=generator)[:count]
                rows.append(torch.cat([labels, torch.full((shape[1] - count,), -1)]))
            return torch.stack(rows)
        if kind == "sign":
            return torch.where(torch.rand(shape, generator=generator) < 0.5, -1.0, 1.0)
        if kind == "filled":
            return torch.full(shape, int(args[0]))
        if kind in ("masked", "allowed"):
            mask = torch.rand(shape, generator=generator) < 0.4
            mask[..., 0] = False
            return mask if kind == "masked" else ~mask
        if kind == "causal":
            return torch.ones(shape, dtype=torch.bool).triu(1)
        if kind in ("offsets", "offsets_last"):
            total, bags = int(args[0]), shape[0] - (kind == "offsets_last")
            starts = torch.randint(0, total + 1, (bags,), generator=generator).sort().values
            starts[0] = 0
            return torch.cat([starts, torch.tensor([total])]) if kind == "offsets_last" else starts
        raise ValueError(f"unknown input kind {self.kind!r}")

    def __repr__(self):
        return f"{self.kind}{list(self.shape)}"


@dataclasses.dataclass(frozen=True)
class Example:
    """A layer and its inputs; ``eval``: random running statistics, then ``.eval()`` before wrapping."""

    module: Build
    inputs: tuple[Input, ...]
    eval: bool = False

    def __repr__(self):
        return f"{self.module!r}{'.eval()' if self.eval else ''} on ({', '.join(map(repr, self.inputs))})"

    def _repr_pretty_(self, printer, cycle):  # hypothesis prints a falsifying example with this
        printer.text(repr(self))


def example(module: Build, *inputs: Input, eval: bool = False) -> Example:
    return Example(module, inputs, eval)


def floats(*shape: int, kind: str = "float") -> Input:
    return Input(tuple(shape), kind)
