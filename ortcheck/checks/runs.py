"""The runs a check compares: the implementation, and the oracle's four eager runs.

``actual`` is the wrapped module. ``eager`` is the module as the user runs it and ``exact`` its
float64 twin on the very same values. ``nudged`` is eager again with every float operand
(parameters, buffers, inputs, cotangents) moved by one ulp of its own dtype, up or down at random
(seeded), and ``nudged_exact`` the float64 twin on those nudged values, sampling another
evaluation order's rounding of every intermediate (:mod:`ortcheck.checks.rounding`). ``nudged`` against
``nudged_exact`` is a second, independent sample of eager's own rounding error; ``nudged_exact``
against ``exact`` is how far rounding the operands and the intermediates moves the answer. Half-precision inputs keep
their values in ``nudged`` (they are the user's, and no half value lies one float32 ulp away) but
move by one float32 ulp in ``nudged_exact``: they are computed on in float32, where a sum of them
rounds. Each run gets fresh leaf tensors, so no two share gradients.
"""
from __future__ import annotations

import copy
from typing import Any

import torch

from ortcheck.checks.float64_twins import as_float64_twin
from ortcheck.checks.rounding import mark_origin, with_rounding
from ortcheck.nested import map_leaves

RUNS = ("actual", "eager", "exact", "nudged", "nudged_exact")
_NUDGED_DTYPES = (torch.float32, torch.float64)


def module_runs(module: torch.nn.Module, wrapped: torch.nn.Module, seed: int = 0) -> dict[str, torch.nn.Module]:
    """``wrapped`` (built from a copy of ``module``) and the oracle's four modules from ``module``."""
    nudged = nudged_module(module, seed)
    held = {t.dtype for t in [*module.parameters(), *module.buffers()]}
    parameters = {p.dtype for p in module.parameters()}
    return {"actual": wrapped, "eager": module, "exact": float64_copy(module), "nudged": nudged,
            "nudged_exact": with_rounding(float64_copy(nudged), seed, held, parameters)}


def input_runs(data: Any, seed: int = 0, device: str | None = None) -> dict[str, Any]:
    """Per run, its own copy of nested ``data`` (float leaves as float64 for the float64 runs)."""
    data = fresh_leaves(data, device)
    moved = nudged(data, seed)
    return {"actual": fresh_leaves(data), "eager": data, "exact": to_float64(data), "nudged": moved,
            "nudged_exact": _half_moved_to_float64(moved, seed)}


def fresh_leaves(data: Any, device: str | None = None) -> Any:
    """Same values, new leaf tensors (on ``device`` if given), same requires_grad."""
    def copy_leaf(leaf):
        if isinstance(leaf, torch.Tensor):
            return leaf.detach().to(device or leaf.device, copy=True).requires_grad_(leaf.requires_grad)
        return leaf

    return map_leaves(data, copy_leaf)


def float64_copy(module: torch.nn.Module) -> torch.nn.Module:
    """A deep copy whose floating parameters and buffers are float64 (same values), switched to a
    float64 formulation where its own kernels have none (:mod:`ortcheck.checks.float64_twins`)."""
    return as_float64_twin(copy.deepcopy(module).double())


def to_float64(data: Any) -> Any:
    """``data`` with every floating tensor as a fresh float64 leaf (same values, same requires_grad)."""
    def convert(leaf):
        if isinstance(leaf, torch.Tensor) and leaf.is_floating_point():
            return mark_origin(leaf.detach().double().requires_grad_(leaf.requires_grad), leaf)
        return leaf

    return map_leaves(data, convert)


def nudged(data: Any, seed: int) -> Any:
    """Fresh leaves with every float32/float64 element moved one ulp up or down at random (seeded)."""
    generator = torch.Generator().manual_seed(seed)

    def nudge(leaf):
        if isinstance(leaf, torch.Tensor):
            return _nudge(leaf, generator).requires_grad_(leaf.requires_grad)
        return leaf

    return map_leaves(data, nudge)


def nudged_module(module: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """A deep copy with every float32/float64 parameter and buffer nudged as :func:`nudged` does."""
    generator = torch.Generator().manual_seed(seed)
    twin = copy.deepcopy(module)
    with torch.no_grad():
        for tensor in [*twin.parameters(), *twin.buffers()]:
            tensor.data = _nudge(tensor, generator)
    return twin


def _half_moved_to_float64(data: Any, seed: int) -> Any:
    """:func:`to_float64`, with half-precision leaves also moved by one float32 ulp up or down."""
    generator = torch.Generator().manual_seed(seed + 1)
    eps = torch.finfo(torch.float32).eps

    def convert(leaf):
        if isinstance(leaf, torch.Tensor) and leaf.is_floating_point():
            value = leaf.detach().double()
            if leaf.dtype not in _NUDGED_DTYPES:
                signs = torch.randint(0, 2, value.shape, generator=generator).double().mul_(2).sub_(1)
                value = value * (1 + eps * signs.to(value.device))
            return mark_origin(value.requires_grad_(leaf.requires_grad), leaf)
        return leaf

    return map_leaves(data, convert)


def _nudge(tensor: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    value = tensor.detach().clone()
    if value.dtype not in _NUDGED_DTYPES:
        return value
    up = torch.randint(0, 2, value.shape, generator=generator).bool().to(value.device)
    direction = torch.where(up, torch.full_like(value, float("inf")), torch.full_like(value, float("-inf")))
    return torch.nextafter(value, direction)
