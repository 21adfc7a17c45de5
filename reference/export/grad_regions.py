"""What forward computes where torch records no gradient stays gradient-free in the graph.

Inside ``torch.no_grad()``, ``set_grad_enabled(False)`` or ``inference_mode()`` eager records nothing,
so a value computed there reaches no parameter's gradient: a buffer updated from the activations
(a running statistic, an EMA) and then used. The exporter traces the whole forward under its own
``no_grad``, which hides those regions, and the gradient builder differentiates every traced path:
the reference was silently wrong there (gradients up to 0.175 off). So the flat module
traces with grad mode on, yet with nothing requiring grad (its inputs come detached and the
module's parameters are frozen for the trace, so the tracer bakes no grad-requiring tensor in, as
it refused to for the 4-bit layers' cached weights), and while the user's code turns grad mode off
this mode detaches the floating tensors each op returns (kept in the graph as
``reference.StopGradient``; integer tensors carry no gradient, and shape arithmetic stays plain). In-place
ops are left as they are: they return the tensor they wrote, whose new value comes from operands
already detached.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_map_only

from reference.seams import Seam

# Fault injection (reference.seams): True traces no_grad regions like the rest (gradients flow through them).
NO_GRAD_REGIONS_TRACED = Seam("no_grad regions traced like the rest of forward", False)


def _in_place(func) -> bool:
    name = getattr(func, "__name__", "")
    return name.endswith("_") and not name.endswith("__") or name.startswith("__i")


class _Detached(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if torch.is_grad_enabled() or _in_place(func):
            return out
        return tree_map_only(torch.Tensor, lambda t: t.detach() if t.is_floating_point() or t.is_complex() else t, out)


@contextlib.contextmanager
def gradient_free_regions(module: torch.nn.Module) -> Iterator[None]:
    """Trace ``module`` inside: grad mode on, its parameters frozen, and what forward computes with
    grad mode off comes out detached."""
    if NO_GRAD_REGIONS_TRACED.value:
        yield
        return
    trainable = [p for p in module.parameters() if p.requires_grad]
    try:
        for p in trainable:
            p.requires_grad_(False)
        with torch.enable_grad(), _Detached():
            yield
    finally:
        for p in trainable:
            p.requires_grad_(True)
