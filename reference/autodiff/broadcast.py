"""Undo numpy-style broadcasting on a gradient: sum it back to the shape of the input it came from.

Ranks are known but sizes are symbolic, so each axis is settled at build time when inference says
enough (same size or symbol: nothing to do; input size 1: sum), first ONNX's inference, then for
what it left open onnxruntime's symbolic one (which carries sizes through reshapes, where ONNX's
mints a fresh symbol). Only the rest is decided at run time from the input's shape:
``ReduceSum(axes = candidates where size == 1, noop_with_empty_axes)``, which copies the whole
gradient when it finds nothing to sum.
Keeping dims (keepdims=1) leaves the result exactly in the input's shape, so no Reshape is needed.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from reference.autodiff.context import GradientContext
from reference.autodiff.forward import Dim
from reference.autodiff.grad_node import GradNode


def reduce_to_shape(ctx: GradientContext, grad: str, grad_dims: Sequence[Dim], target: str,
                    grad_like: str | None = None) -> str:
    """Sum ``grad`` (shaped ``grad_dims``, like forward value ``grad_like`` if given) over the axes
    along which forward value ``target`` was broadcast."""
    target_dims = ctx.dims(target)
    if target_dims is None:
        ctx.rank(target)  # raises, naming the value
    leading = len(grad_dims) - len(target_dims)
    if leading > 0:
        grad = ctx.op("ReduceSum", grad, ctx.ints(range(leading)), keepdims=0)
    summed, undecided = [], []
    for axis, (size, grad_size) in enumerate(zip(target_dims, grad_dims[leading:])):
        if (size is not None and size == grad_size) or grad_size == 1:
            continue  # not broadcast
        if size == 1:
            summed.append(axis)
        elif not isinstance(size, int):
            undecided.append(axis)  # symbolic or unknown: 1 or the full size, known only at run time
    if undecided and grad_like is not None:
        undecided, more = _settled_symbolically(ctx, undecided, target, grad_like, leading)
        summed = sorted(summed + more)
    if not undecided:
        return ctx.op("ReduceSum", grad, ctx.ints(summed), keepdims=1) if summed else grad
    candidates = sorted(summed + undecided)
    sizes = ctx.shape(target)
    if len(candidates) < len(target_dims):
        sizes = ctx.op("Gather", sizes, ctx.ints(candidates))
    is_one = ctx.op("Equal", sizes, ctx.constant(np.array(1, dtype=np.int64)))
    axes = ctx.op("Compress", ctx.ints(candidates), is_one, axis=0)
    return ctx.op("ReduceSum", grad, axes, keepdims=1, noop_with_empty_axes=1)


def reduce_to_input(ctx: GradientContext, node: GradNode, index: int, grad: str) -> str:
    """``reduce_to_shape`` for a gradient shaped like the node's (broadcast) output."""
    output = node.output(0)
    ctx.rank(output)  # raises when unknown
    return reduce_to_shape(ctx, grad, ctx.dims(output), node.input(index), grad_like=output)


def _settled_symbolically(ctx: GradientContext, axes: list[int], target: str, grad_like: str, leading: int
                          ) -> tuple[list[int], list[int]]:
    """(still undecided, to sum) of ``axes`` by onnxruntime's symbolic sizes: the same expression
    as the gradient's, or a size other than 1, needs no sum; a size of 1 does."""
    target_dims, grad_dims = ctx.symbolic_dims(target), ctx.symbolic_dims(grad_like)
    if target_dims is None or grad_dims is None or len(grad_dims) - len(target_dims) != leading:
        return axes, []
    undecided, summed = [], []
    for axis in axes:
        size, grad_size = target_dims[axis], grad_dims[leading + axis]
        if size == 1 and grad_size != 1:
            summed.append(axis)
        elif size is None or not (size == grad_size or (isinstance(size, int) and size != 1)):
            undecided.append(axis)
    return undecided, summed

