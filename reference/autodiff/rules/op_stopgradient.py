"""``reference.StopGradient``: ``tensor.detach()`` as the reference exports it (reference/export/detach.py).
Its output carries no gradient, as in PyTorch."""
from reference.autodiff.registry import non_differentiable

non_differentiable("StopGradient", domain="reference")
