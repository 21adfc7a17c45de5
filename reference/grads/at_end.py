"""Gradients as autograd outputs: one node runs the whole backward graph and hands torch every
gradient at once, when the graph has finished."""
from __future__ import annotations

import torch

from reference.grads.first_order import first_order_only
from reference.runtime import TrainingRunner


class OrtGraphFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, runner: TrainingRunner, *inputs: torch.Tensor):
        outputs, stashed = runner.forward(inputs)
        ctx.runner = runner
        ctx.save_for_backward(*inputs, *stashed)
        ctx.num_inputs = len(inputs)
        ctx.mark_non_differentiable(*ctx.runner.non_differentiable(outputs))
        return tuple(outputs)

    @staticmethod
    @first_order_only  # the backward graph runs in onnxruntime: its result has no torch graph
    def backward(ctx, *output_grads: torch.Tensor):
        saved = ctx.saved_tensors
        inputs, stashed = saved[: ctx.num_inputs], saved[ctx.num_inputs:]
        grads = ctx.runner.backward(inputs, stashed, output_grads)
        return (None, *[g if needs else None for g, needs in zip(grads, ctx.needs_input_grad[1:])])
