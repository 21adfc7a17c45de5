"""The training loop every convergence run shares (eager, float64, the implementation, each DDP rank)."""
from __future__ import annotations

import math
from typing import Callable

import torch

from ortcheck.checks.autocast import autocast_region
from ortcheck.convergence.curves import Curve
from ortcheck.convergence.training import TrainingConfig, build_optimizer, build_scaler, build_scheduler
from ortcheck.impls.base import Implementation


def train_steps(loss_fn: Callable, module: torch.nn.Module, batches: list, seed: int, device: str,
                training: TrainingConfig, fallbacks: Callable[[], int] = lambda: 0,
                loss_value: Callable[[torch.Tensor], float] = float) -> Curve:
    """The training loop of every run; ``loss_value`` turns the step's loss into the recorded number
    (data-parallel ranks average theirs), ``fallbacks`` counts the implementation's fallbacks so far.

    Under the case's autocast the forward and the loss run in the region and backward outside it,
    with a GradScaler as PyTorch's AMP recipe writes it (scale, backward, ``unscale_``, clip, step,
    update). autocast leaves the float64 runs in float64: the oracle's truth stays exact."""
    metrics = {"loss": [], "grad_norm": [], "lr": []}
    fallback_steps, skipped_steps = [], []
    optimizer = build_optimizer(module.parameters(), training)
    scheduler = build_scheduler(optimizer, training)
    scaler = build_scaler(training, device)
    autocast = getattr(torch, training.autocast) if training.autocast else None
    trainable = [p for p in module.parameters() if p.requires_grad]
    before = fallbacks()
    for step, (inputs, target) in enumerate(batches):
        optimizer.zero_grad(set_to_none=True)
        inputs = tuple(t.to(device) for t in inputs)
        with autocast_region(torch.device(device).type, autocast):
            loss = loss_fn(module(*inputs), target.to(device))
        (scaler.scale(loss) if scaler else loss).backward()
        if scaler:
            scaler.unscale_(optimizer)
        norm = torch.nn.utils.clip_grad_norm_(trainable, training.max_grad_norm or math.inf)
        metrics["lr"].append(float(optimizer.param_groups[0]["lr"]))
        if scaler:
            scale = scaler.get_scale()
            scaler.step(optimizer)
            scaler.update()
            if scaler.get_scale() < scale:  # backed off: the step found an inf and was skipped
                skipped_steps.append(step)
        else:
            optimizer.step()
        scheduler.step()
        metrics["loss"].append(loss_value(loss.detach()))
        metrics["grad_norm"].append(float(norm))
        now = fallbacks()
        if now > before:
            fallback_steps.append(step)
        before = now
    return Curve(seed, metrics, fallback_steps, skipped_steps)


def fallbacks_of(impl: Implementation | None, wrapped: torch.nn.Module) -> int:
    if impl is None:
        return 0
    return impl.observe(wrapped).fallbacks or 0
