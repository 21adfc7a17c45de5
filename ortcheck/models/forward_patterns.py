"""Small modules written the way people write ``forward``, each around one autograd or Python
pattern a trace can get wrong: regions without gradients, values read twice, frozen
parts, Python control flow on sizes and on values (``suites/test_forward_patterns.py``)."""
from __future__ import annotations

import torch

FEATURES = 4


class _Base(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(FEATURES, FEATURES)


class NoGradBuffer(_Base):
    """A running mean of the activations kept in a buffer under ``no_grad``, then used: no gradient
    flows through the statistic (BatchNorm-like layers, EMAs, codebooks)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("running", torch.zeros(FEATURES))

    def forward(self, x):
        h = self.lin(x)
        with torch.no_grad():
            self.running.mul_(0.9).add_(0.1 * h.mean(0))
        return h * self.running + h


class GradDisabledScale(_Base):
    """A scale computed from the weight inside ``set_grad_enabled(False)``: a constant to autograd."""

    def forward(self, x):
        with torch.set_grad_enabled(False):
            scale = 1.0 / (1.0 + self.lin.weight.norm())
        return self.lin(x) * scale


class Detached(_Base):
    """A stop-gradient: ``h * h.detach()`` has gradient ``h.detach()`` only."""

    def forward(self, x):
        h = self.lin(x)
        return h * h.detach() + h


class TiedWeights(torch.nn.Module):
    """An embedding and an output projection sharing one weight: its gradient is the sum of both uses."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(6, FEATURES)
        self.out = torch.nn.Linear(FEATURES, 6, bias=False)
        self.out.weight = self.embed.weight

    def forward(self, x):
        ids = (x.abs() * 3).long().clamp(0, 5)[:, 0]
        return self.out(self.embed(ids) + x)


class FrozenPart(_Base):
    """A frozen submodule (``requires_grad=False``) in front of a trained one: no gradient for it."""

    def __init__(self):
        super().__init__()
        self.frozen = torch.nn.Linear(FEATURES, FEATURES)
        self.frozen.requires_grad_(False)

    def forward(self, x):
        return self.lin(torch.tanh(self.frozen(x)))


class SizeBranch(_Base):
    """Python control flow on a size: ``if x.shape[0] > 2`` a trace at batch 2 bakes the other branch."""

    def forward(self, x):
        y = self.lin(x)
        if x.shape[0] > 2:
            y = y / x.shape[0]
        return y


class SizeLoop(_Base):
    """A Python loop over the rows (``for i in range(x.shape[0])``), each row scaled by its index."""

    def forward(self, x):
        h = self.lin(x)
        rows = [h[i] * (i + 1) for i in range(x.shape[0])]
        return torch.stack(rows)


class ValueBranch(_Base):
    """Python control flow on a value (``.item()``): the branch follows the data's sign (the suite's
    inputs change sign from call to call)."""

    def forward(self, x):
        h = self.lin(x)
        return h * 2 if x.sum().item() > 0 else h - 1


PATTERNS = {"no_grad_buffer": NoGradBuffer, "grad_disabled_scale": GradDisabledScale, "detached": Detached,
            "tied_weights": TiedWeights, "frozen_part": FrozenPart, "size_branch": SizeBranch, "size_loop": SizeLoop,
            "value_branch": ValueBranch}
