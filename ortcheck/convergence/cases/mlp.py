"""MLP regression: the plainest training loop, so a deviation here is in the basics."""
import torch
from torch import nn

from ortcheck.convergence.cases import Case
from ortcheck.convergence.tolerance import FP32_PARITY
from ortcheck.convergence.training import TrainingConfig

FEATURES, HIDDEN, BATCH = 8, 64, 32


def build() -> nn.Module:
    return nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, HIDDEN), nn.GELU(),
                         nn.Linear(HIDDEN, 1))


def batches(seed: int, steps: int) -> list:
    """Noisy samples of a fixed smooth function: a target the MLP can actually learn."""
    generator = torch.Generator().manual_seed(seed)
    direction = torch.randn(FEATURES, generator=generator)
    out = []
    for _ in range(steps):
        x = torch.randn(BATCH, FEATURES, generator=generator)
        y = torch.sin(x @ direction / FEATURES ** 0.5).unsqueeze(-1) + 0.05 * torch.randn(BATCH, 1, generator=generator)
        out.append(((x,), y))
    return out


CASE = Case(
    name="mlp",
    description="3-layer MLP regression of sin(x.w), AdamW with cosine decay and clipping",
    build=build,
    batches=batches,
    loss=nn.functional.mse_loss,
    training=TrainingConfig(steps=60, optimizer="adamw", lr=3e-3, warmup_steps=5),
    tolerance=FP32_PARITY,
    nightly_steps=600,
)
