"""The registry of convergence cases: our own models and data, no downloads.

A case is plain data plus three functions (model, batches, loss), so the runner treats every
case alike and a golden file can record its configuration. Adding a case: one module here with a
``CASE`` (or ``CASES``), listed in ``_MODULES``. A case may train through the implementation
under extra :class:`~ortcheck.impls.Options` (``options``, e.g. a memory-optimizer level) and name
the capabilities that needs (``requires``), and train it data-parallel on ``ranks`` processes
(DDP; eager and the float64 runs train once on the whole batches, which DDP must reproduce).
A case in mixed precision (its training's ``autocast`` and ``loss_scale``) keeps its goldens beside
its float32 case's (``golden_case``), one file per dtype.
"""
from __future__ import annotations

import dataclasses
import importlib
from typing import Callable, Mapping

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
    options: Mapping[str, object] = dataclasses.field(default_factory=dict)  # Options fields for the implementation's side
    requires: tuple[str, ...] = ()                     # Capability names the options need
    ranks: int = 1                                     # >1: the implementation's side trains under DDP
    golden_case: str | None = None                     # folder of its goldens under golden/ (default: name)

    def __post_init__(self):
        if self.ranks < 1:
            raise ValueError(f"case {self.name!r}: ranks must be at least 1, got {self.ranks}")

    def lacking(self, capabilities: frozenset[str]) -> list[str]:
        """What this case needs that an implementation with ``capabilities`` lacks (it is n/a there)."""
        return [name for name in self.requires if name not in capabilities]

    @property
    def golden_folder(self) -> str:
        return self.golden_case or self.name

    def config(self, steps: int) -> dict:
        """What a golden records about how the curve was made (compared before a golden is trusted)."""
        extra = {"options": dict(self.options)} if self.options else {}
        if self.ranks > 1:
            extra["ranks"] = self.ranks
        training = {key: value for key, value in self.training.to_json().items() if value is not None
                    or key not in ("autocast", "loss_scale")}  # float32 goldens predate the two
        return {"description": self.description, **training, "steps": steps, **extra}


_MODULES = ("mlp", "bloom_lm", "bloom_lm_recompute", "qlora", "ddp", "dropout", "bloom_lm_large", "mixed_precision")


def _load() -> dict[str, Case]:
    modules = [importlib.import_module(f"ortcheck.convergence.cases.{name}") for name in _MODULES]
    cases = [case for module in modules for case in getattr(module, "CASES", None) or (module.CASE,)]
    return {case.name: case for case in cases}


def names() -> list[str]:
    return list(_load())


def get(name: str) -> Case:
    cases = _load()
    if name not in cases:
        raise ValueError(f"unknown convergence case {name!r}; valid: {', '.join(cases)}")
    return cases[name]
