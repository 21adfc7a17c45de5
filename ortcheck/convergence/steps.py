"""The training loop every convergence run shares (eager, float64, the implementation, each DDP rank)."""
from __future__ import annotations

import math
from typing import Callable

import torch

from ortcheck.convergence.curves import Curve
from ortcheck.convergence.training import TrainingConfig, build_optimizer, build_scheduler
from ortcheck.impls.base import Implementation


def train_steps(loss_fn: Callable, module: torch.nn.Module, batches: list, seed: int, device: str,
                training: TrainingConfig, fallbacks: Callable[[], int] = lambda: 0,
                loss_value: Callable[[torch.Tensor], float] = float) -> Curve:
    """The training loop of every run; ``loss_value`` turns the step's loss into the recorded number
    (data-parallel ranks average theirs), ``fallbacks`` counts the implementation's fallbacks so far."""
    metrics = {"loss": [], "grad_norm": [], "lr": []}
    fallback_steps = []
    optimizer = build_optimizer(module.parameters(), training)
    scheduler = build_scheduler(optimizer, training)
    trainable = [p for p in module.parameters() if p.requires_grad]
    before = fallbacks()
    for step, (inputs, target) in enumerate(batches):
        optimizer.zero_grad(set_to_none=True)
        inputs = tuple(t.to(device) for t in inputs)
        loss = loss_fn(module(*inputs), target.to(device))
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(trainable, training.max_grad_norm or math.inf)
        metrics["lr"].append(float(optimizer.param_groups[0]["lr"]))
        optimizer.step()
        scheduler.step()
        metrics["loss"].append(loss_value(loss.detach()))
        metrics["grad_norm"].append(float(norm))
        now = fallbacks()
        if now > before:
            fallback_steps.append(step)
        before = now
    return Curve(seed, metrics, fallback_steps)


def fallbacks_of(impl: Implementation | None, wrapped: torch.nn.Module) -> int:
    if impl is None:
        return 0
    return impl.observe(wrapped).fallbacks or 0
