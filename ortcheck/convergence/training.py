"""Optimizer, learning-rate schedule and clipping of a case, described by plain data.

Why data rather than factories: the configuration is recorded in golden files and compared with
the case's current one, so a golden recorded for other hyperparameters is reported as stale
instead of being compared with a curve it can't match.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Iterable

import torch

OPTIMIZERS = ("sgd", "adamw")
SCHEDULES = ("constant", "cosine", "step")
AUTOCAST = ("float16", "bfloat16")


@dataclasses.dataclass(frozen=True)
class TrainingConfig:
    steps: int
    optimizer: str = "adamw"
    lr: float = 1e-3
    momentum: float = 0.9          # sgd
    weight_decay: float = 0.0
    schedule: str = "cosine"       # cosine: linear warmup then cosine to 0; step: halve every third
    warmup_steps: int = 0
    max_grad_norm: float | None = 1.0  # clip before the step; the recorded norm is the unclipped one
    seeds: tuple[int, ...] = (0,)  # one run per seed (several for statistical cases)
    autocast: str | None = None    # forward and loss under torch.autocast in this dtype (None: off)
    loss_scale: float | None = None  # torch.amp.GradScaler at this fixed scale (a power of two: unscaling is exact)

    def __post_init__(self):
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {self.optimizer!r}; valid: {', '.join(OPTIMIZERS)}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {self.schedule!r}; valid: {', '.join(SCHEDULES)}")
        if self.steps < 1 or not self.seeds:
            raise ValueError("a case needs at least one step and one seed")
        if self.autocast is not None and self.autocast not in AUTOCAST:
            raise ValueError(f"unknown autocast dtype {self.autocast!r}; valid: {', '.join(AUTOCAST)}")
        if self.loss_scale is not None and not (self.loss_scale > 0 and math.frexp(self.loss_scale)[0] == 0.5):
            raise ValueError(f"loss_scale must be a positive power of two, got {self.loss_scale!r}")

    @property
    def dtype(self) -> str:
        """The precision the forward computes in, as goldens name it: autocast's dtype, or float32."""
        return self.autocast or "float32"

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["seeds"] = list(self.seeds)
        return data


def build_optimizer(parameters: Iterable[torch.nn.Parameter], config: TrainingConfig) -> torch.optim.Optimizer:
    trainable = [p for p in parameters if p.requires_grad]
    if config.optimizer == "sgd":
        return torch.optim.SGD(trainable, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay)
    return torch.optim.AdamW(trainable, lr=config.lr, weight_decay=config.weight_decay)


def build_scaler(config: TrainingConfig, device: str) -> torch.amp.GradScaler | None:
    """The case's GradScaler (None without ``loss_scale``): its scale never grows, so every run scales
    by the same power of two and a step is skipped only where a gradient overflowed."""
    if config.loss_scale is None:
        return None
    return torch.amp.GradScaler(torch.device(device).type, init_scale=config.loss_scale, growth_interval=2 ** 30)


def build_scheduler(optimizer: torch.optim.Optimizer, config: TrainingConfig) -> torch.optim.lr_scheduler.LRScheduler:
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_factor(step, config))


def lr_factor(step: int, config: TrainingConfig) -> float:
    """Multiplier of ``config.lr`` at ``step`` (a plain function: picklable, testable, exact)."""
    warmup = min(1.0, (step + 1) / config.warmup_steps) if config.warmup_steps else 1.0
    if config.schedule == "cosine":
        return warmup * 0.5 * (1.0 + math.cos(math.pi * min(step, config.steps) / config.steps))
    if config.schedule == "step":
        return warmup * 0.5 ** (step // max(1, config.steps // 3))
    return warmup
