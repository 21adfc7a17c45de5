"""The grads stage (docs/architecture.md): how the backward graph's gradients reach torch.

- ``at_end``: one autograd node runs the whole backward graph and returns every gradient when it
  has finished (the default).
- ``as_produced``: the backward graph runs in stages (cut by ``reference.runtime.cuts``), each
  ending where parameter gradients are complete; torch accumulates each stage's gradients, and
  fires their hooks, before the next stage runs (``Options(mem_efficient_grad=True)``).

Both refuse ``create_graph=True`` (``first_order``): the backward runs in onnxruntime, so a first
derivative would silently have no graph.
"""
from __future__ import annotations

from typing import Sequence

import torch

from reference.grads import as_produced
from reference.grads.at_end import OrtGraphFunction
from reference.runtime import TrainingRunner


def run(runner: TrainingRunner, tensors: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """The forward graph's outputs for ``tensors`` (one per graph input), with the runner's way of
    delivering gradients behind them."""
    if runner.staged is None or not torch.is_grad_enabled():
        return OrtGraphFunction.apply(runner, *tensors)
    return as_produced.apply(runner, tensors)


__all__ = ["OrtGraphFunction", "run"]
