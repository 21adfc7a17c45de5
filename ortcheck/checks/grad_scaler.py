"""Training steps with ``torch.amp.GradScaler`` under float16 autocast, as the PyTorch AMP recipe
writes them (scale, backward, ``unscale_``, clip, step, update), judged against eager.

The loss scale jumps between a scale at which any float16 gradient overflows (2**40: float16 holds
nothing below 6e-8 that 2**40 keeps finite) and one at which none can in these small models (2**10:
a gradient would need to exceed 64), so every skip or step is decided far from the threshold: the
same decision is right for any correct pipeline, whatever its rounding. The float64 runs, which no
autocast region reaches, cannot overflow: they skip exactly the steps eager skipped, and step with
the unscaled, clipped gradients otherwise.
"""
from __future__ import annotations

from typing import Callable

import torch

from ortcheck.checks.autocast import autocast_region
from ortcheck.checks.oracle import assert_matches_oracle
from ortcheck.checks.runs import RUNS, input_runs

OVERFLOWING, SAFE = 2.0 ** 40, 2.0 ** 10
CLIP = 1.0
FOLLOWERS = {"exact": "eager", "nudged_exact": "nudged"}  # float64 runs take their float32 twin's decisions


def sgd(params):  # the optimizer the drawn stacks step with
    return torch.optim.SGD(params, lr=0.1)


def _scaler(device: str) -> torch.amp.GradScaler:
    return torch.amp.GradScaler(device, init_scale=OVERFLOWING, growth_factor=OVERFLOWING / SAFE,
                                backoff_factor=SAFE / OVERFLOWING, growth_interval=1)


def assert_scaled_steps_match_eager(stack, modules: dict, seed: int, steps: int, device: str) -> None:
    """``steps`` scaled SGD steps per run of a drawn stack (its inputs and loss)."""
    assert_scaled_training_matches_eager(
        modules, lambda step: input_runs(stack.make_inputs(seed + step), seed=step, device=device),
        lambda module, inputs: stack.loss(module(*inputs)), steps, device)


def assert_scaled_training_matches_eager(modules: dict, inputs_of: Callable[[int], dict], loss_of: Callable,
                                         steps: int, device: str, optimizer: Callable = sgd) -> None:
    """``steps`` scaled optimizer steps per run (``inputs_of(step)``: each run's inputs, ``loss_of(module,
    inputs)``: the loss, computed in the autocast region): the scales and skipped steps equal eager's,
    and the parameters after every step within the oracle's bound."""
    optimizers = {run: optimizer([p for p in modules[run].parameters() if p.requires_grad]) for run in RUNS}
    scalers = {run: _scaler(device) for run in RUNS if run not in FOLLOWERS}
    history = {run: [] for run in scalers}  # per float32 run: (scale used, stepped) per step
    for step in range(steps):
        runs = inputs_of(step)
        for run in RUNS:
            optimizers[run].zero_grad(set_to_none=True)
            with autocast_region(device, torch.float16):
                loss = loss_of(modules[run], runs[run])
            params = [p for p in modules[run].parameters() if p.requires_grad]
            if run in FOLLOWERS:
                loss.backward()
                if history[FOLLOWERS[run]][-1][1]:
                    torch.nn.utils.clip_grad_norm_(params, CLIP)
                    optimizers[run].step()
                continue
            scaler = scalers[run]
            scale = scaler.get_scale()
            scaler.scale(loss).backward()
            scaler.unscale_(optimizers[run])
            torch.nn.utils.clip_grad_norm_(params, CLIP)
            scaler.step(optimizers[run])
            scaler.update()
            history[run].append((scale, scaler.get_scale() >= scale))  # a skipped step backs the scale off
        assert history["actual"] == history["eager"], (
            f"step {step}: (loss scale, stepped) per step {history['actual']}, eager's {history['eager']}")
        assert history["nudged"] == history["eager"], f"step {step}: a decision on a knife edge {history}"
        assert_matches_oracle({run: dict(modules[run].named_parameters()) for run in RUNS},
                              path=f"parameters after scaled step {step}")
