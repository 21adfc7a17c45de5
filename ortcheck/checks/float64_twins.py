"""The float64 runs of models whose own code calls kernels torch has only in reduced precision.

The oracle's truth is the same computation in float64. A few libraries pick, by default, a kernel that
has no float64 form on some device, though an equal formulation beside it has one; the float64 copies
are switched to that formulation (the same function of the same weights), while the float32 runs,
eager's and the implementation's, keep the user's. Each switch is one registered function, as
``torch.utils._pytree`` registers a type: it changes a module in place and says nothing if it does not
apply.
"""
from __future__ import annotations

from typing import Callable

import torch

TWINS: list[Callable[[torch.nn.Module], None]] = []


def twin(switch: Callable[[torch.nn.Module], None]) -> Callable[[torch.nn.Module], None]:
    TWINS.append(switch)
    return switch


def as_float64_twin(module: torch.nn.Module) -> torch.nn.Module:
    """``module`` (a float64 copy) with every registered switch applied."""
    for switch in TWINS:
        switch(module)
    return module


@twin
def transformers_grouped_experts(module: torch.nn.Module) -> None:
    """transformers' mixtures of experts default to one grouped matmul over tokens sorted by expert
    (``experts_implementation="grouped_mm"``; ``torch.nn.functional.grouped_mm`` takes float32,
    bfloat16 and float16 only); its "eager" experts loop over the experts hit with plain matmuls.
    transformers reads the choice from the config at every call."""
    for config in {id(m.config): m.config for m in module.modules() if hasattr(m, "config")}.values():
        if getattr(config, "_experts_implementation", None) == "grouped_mm":
            config._experts_implementation = "eager"
