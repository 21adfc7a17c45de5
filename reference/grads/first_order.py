"""Backwards that run in onnxruntime give first derivatives only: ``create_graph=True`` is refused.

``torch.autograd.function.once_differentiable`` is not enough. It marks the gradients it returns
as non-differentiable only when the incoming gradients require grad; with a constant cotangent
(``torch.autograd.grad(out.sum(), x, create_graph=True)``, a gradient penalty) it returns a first
derivative that silently has no graph, and the penalty's backward then skips the parameters. Our
backward runs with grad mode on exactly when autograd was asked for a graph, so it refuses then,
before returning anything.
"""
from __future__ import annotations

import functools

import torch

REFUSAL = ("create_graph=True (double backward) is not supported by the reference pipeline: its backward "
           "runs in onnxruntime and records no torch graph to differentiate again")


def first_order_only(backward):
    @functools.wraps(backward)
    def refusing(ctx, *grads):
        if torch.is_grad_enabled():
            raise RuntimeError(REFUSAL)
        return backward(ctx, *grads)

    return refusing
