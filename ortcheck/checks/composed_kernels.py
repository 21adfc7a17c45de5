"""Fused kernels whose backward the sampled rounding computes step by step: where a kernel cancels inside.

The sampled rounding (:mod:`ortcheck.checks.rounding`) moves each op's result, and the gradient flowing
into it; what one kernel computes inside stays exact. softmax's backward, ``y * (g - sum(y * g))``,
subtracts two terms of size ``|g|`` whose difference is exactly 0 wherever ``g`` is constant along the
axis: attention over identical tokens (``[2, 2, 2]``), where every value row is the same. float32 leaves
``eps * |g|`` of that difference (its ``y`` sum to 1 only to rounding), and the product with the keys
turns it into a query gradient that is 0 in float64 whatever the operands: no nudge breaks the
symmetry, so the oracle's bound was 0 and every other correct evaluation order failed (a random seed
drew it). In the sampled run such a kernel runs its forward as it is (its result sampled) and its
backward as the kernel's own formula, with each step's result sampled, from the sampled output.

One backward per kernel, registered for each form torch dispatches it under; a call it does not cover
(an axis left for torch to guess) runs as any other op.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn.functional as F

Moved = Callable[[torch.Tensor], torch.Tensor]  # a result, sampled: times (1 + u * eps / 2)
BACKWARDS: dict[Callable, Callable[[Moved, torch.Tensor, torch.Tensor, int], torch.Tensor]] = {}
_FUNCTIONAL = (F.softmax, F.log_softmax)  # these put ``_stacklevel`` before ``dtype``


def backward_of(*funcs: Callable):
    """Register ``backward(moved, output, grad, dim) -> input grad`` for each of ``funcs``: ``moved``
    samples the rounding of a step inside the kernel."""
    def register(backward):
        for func in funcs:
            BACKWARDS[func] = backward
        return backward

    return register


def sampled_call(func: Callable, args: tuple, kwargs: dict, moved: Moved, inside: Moved):
    """``func(*args, **kwargs)`` with its result and the gradient flowing into it sampled by ``moved``,
    as any op's, and its registered backward computed step by step, the steps sampled by ``inside``
    (its own stream: adding a kernel here leaves every other op's samples as they were); or
    ``NotImplemented`` where no backward is registered or the call is not covered."""
    backward = BACKWARDS.get(func)
    if backward is None:
        return NotImplemented
    names = ("input", "dim", "_stacklevel", "dtype") if func in _FUNCTIONAL else ("input", "dim", "dtype")
    named = {**dict(zip(names, args)), **kwargs}
    x, dim, dtype = named.get("input", named.get("self")), named.get("dim"), named.get("dtype")
    if dim is None or not isinstance(x, torch.Tensor) or not x.is_floating_point() or dtype not in (None, x.dtype):
        return NotImplemented  # a cast (a float64 twin's ``dtype=torch.float32``) computes in the model's own rounding
    rest = {name: value for name, value in named.items() if name not in ("input", "self")}
    return _Stepped.apply(x, lambda operand: func(operand, **rest), backward, dim, moved, inside)


class _Stepped(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, run, backward, dim, moved, inside):
        output = moved(run(x))
        ctx.save_for_backward(output)
        ctx.backward, ctx.dim, ctx.moved, ctx.inside, ctx.input_dtype = backward, dim, moved, inside, x.dtype
        return output

    @staticmethod
    def backward(ctx, grad):
        output, = ctx.saved_tensors
        grad_input = ctx.backward(ctx.inside, output, ctx.moved(grad), ctx.dim)
        return grad_input.to(ctx.input_dtype), None, None, None, None, None


@backward_of(torch.softmax, torch.Tensor.softmax, F.softmax, torch.special.softmax)
def softmax_backward(moved: Moved, y: torch.Tensor, g: torch.Tensor, dim: int) -> torch.Tensor:
    """``y * (g - sum(y * g))``: the sum's rounding is the one ``y`` summing to 1 cannot cancel."""
    return y * (g - moved((y * g).sum(dim, keepdim=True)))


@backward_of(torch.log_softmax, torch.Tensor.log_softmax, F.log_softmax, torch.special.log_softmax)
def log_softmax_backward(moved: Moved, y: torch.Tensor, g: torch.Tensor, dim: int) -> torch.Tensor:
    """``g - exp(y) * sum(g)``: the sum's rounding is the one ``exp(y)`` summing to 1 cannot cancel."""
    return g - y.exp() * moved(g.sum(dim, keepdim=True))
