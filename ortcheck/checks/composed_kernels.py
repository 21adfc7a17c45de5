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
(an axis left for torch to guess) runs as any other op. Calls that hold such a kernel inside one torch
call (attention) are opened instead: run with the sampling on, each op inside sampled (:data:`OPENED`).
"""
from __future__ import annotations

import math
import types
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


# ---- kernels the sampling runs op by op --------------------------------------------------------
# A call of one of these runs with the sampling still on (``with mode``), so each op inside is
# sampled as any other: attention (nn.MultiheadAttention's F.multi_head_attention_forward, and the
# scaled_dot_product_attention it and transformers' models call) holds a softmax whose backward
# cancels (nn.Transformer with d_model 2: every LayerNorm row is +-w, so memory rows repeat).
# ``NotImplemented`` leaves a call to the fused kernel.
OPENED: dict[Callable, Callable] = {}


def _opened(func: Callable) -> Callable:
    """``func`` (a Python function of torch.nn.functional) with its torch-function check answered
    "no": its body runs, its ops dispatched to the mode one by one."""
    never = {name: (lambda *_: False) for name in
             ("has_torch_function", "has_torch_function_unary", "has_torch_function_variadic")}
    clone = types.FunctionType(func.__code__, {**func.__globals__, **never}, func.__name__, func.__defaults__,
                               func.__closure__)
    clone.__kwdefaults__ = func.__kwdefaults__
    return clone


OPENED[F.multi_head_attention_forward] = _opened(F.multi_head_attention_forward)


def _attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """``softmax(q @ k^T * scale + mask) @ v``; a row no key may attend to is left to the kernel (torch
    versions answer it with NaN or 0), as are dropout (its own random draws) and grouped heads."""
    if dropout_p or enable_gqa or not query.is_floating_point():
        return NotImplemented
    if is_causal:
        attn_mask = torch.ones(query.size(-2), key.size(-2), dtype=torch.bool, device=query.device).tril()
    scores = query @ key.transpose(-2, -1) * (1 / math.sqrt(query.size(-1)) if scale is None else scale)
    if attn_mask is not None:
        allowed = attn_mask if attn_mask.dtype == torch.bool else attn_mask > -math.inf
        if not bool(allowed.any(-1).all()):
            return NotImplemented
        scores = scores.masked_fill(~attn_mask, -math.inf) if attn_mask.dtype == torch.bool else scores + attn_mask
    return torch.softmax(scores, dim=-1) @ value


OPENED[F.scaled_dot_product_attention] = _attention
