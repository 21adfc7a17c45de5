"""The registry of convergence cases: our own models and data, no downloads.

A case is plain data plus three functions (model, batches, loss), so the runner treats every
case alike and a golden file can record its configuration. Adding a case: one module here with a
``CASE``, listed in ``_MODULES``. The 4-bit QLoRA case joins here once the bnb4 stage lands.
"""
from __future__ import annotations

import dataclasses
import importlib
from typing import Callable

import torch

from ortcheck.convergence.tolerance import Tolerance
from ortcheck.convergence.training import TrainingConfig

Batch = tuple[tuple, torch.Tensor]  # (model inputs, target)


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    description: str
    build: Callable[[], torch.nn.Module]              # called under the run's seed
    batches: Callable[[int, int], list[Batch]]        # (seed, steps) -> one batch per step, on CPU
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    training: TrainingConfig
    tolerance: Tolerance
    nightly_steps: int                                 # steps under --nightly
    nightly_only: bool = False                         # too big for every run: only with --nightly

    def config(self, steps: int) -> dict:
        """What a golden records about how the curve was made (compared before a golden is trusted)."""
        return {"description": self.description, **self.training.to_json(), "steps": steps}


_MODULES = ("mlp", "bloom_lm", "dropout", "bloom_lm_large")  # qlora: with the bnb4 stage


def _load() -> dict[str, Case]:
    cases = [importlib.import_module(f"ortcheck.convergence.cases.{name}").CASE for name in _MODULES]
    return {case.name: case for case in cases}


def names() -> list[str]:
    return list(_load())


def get(name: str) -> Case:
    cases = _load()
    if name not in cases:
        raise ValueError(f"unknown convergence case {name!r}; valid: {', '.join(cases)}")
    return cases[name]
