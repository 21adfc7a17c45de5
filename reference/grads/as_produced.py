"""Gradients as the backward graph produces them: a chain of autograd nodes, one per backward stage.

Forward applies the chain from the inputs' end: a node owning the graph's other inputs, then one
node per stage owning the parameters whose gradients that stage completes, then the node that runs
the forward graph. Backward walks it the other way, so after each stage torch's engine accumulates
that stage's gradients (accumulation nodes run first in its queue) and fires their hooks before the
next stage runs, and the stage's copies and the activations nothing later reads are freed. Every
parameter stays an ordinary autograd input: ``torch.autograd.grad`` captures gradients without
touching ``.grad``, DDP's hooks see each gradient once, and ``backward(inputs=...)`` works.
Links between the nodes are empty tensors; the values themselves travel in a per-call
:class:`BackwardPass`.
"""
from __future__ import annotations

from typing import Sequence

import torch

from reference.grads.first_order import first_order_only
from reference.runtime import TrainingRunner


class BackwardPass:
    """What one forward call's chain shares: the runner and, during a backward, the live values."""

    def __init__(self, runner: TrainingRunner):
        self.runner = runner
        self.live: dict[str, torch.Tensor] = {}


def _link() -> torch.Tensor:
    return torch.zeros(())


class InputsNode(torch.autograd.Function):
    """Owns the graph inputs no stage delivers (the user's tensors, frozen state). Runs last in
    backward: what is left of the graph, then those inputs' gradients."""

    @staticmethod
    def forward(ctx, run: BackwardPass, *tensors: torch.Tensor):
        ctx.run = run
        return _link()

    @staticmethod
    @first_order_only
    def backward(ctx, _link_grad):
        run, runner = ctx.run, ctx.run.runner
        run.runner.staged.run(len(runner.staged) - 1, run.live)
        names = [name for name in runner.graph_inputs if name not in runner.staged_inputs]
        grads = [run.live.get(runner.grad_names[name]) if needs else None
                 for name, needs in zip(names, ctx.needs_input_grad[1:])]
        run.live.clear()
        return (None, *grads)


class StageNode(torch.autograd.Function):
    """Owns the parameters stage ``index`` completes; its backward runs that stage."""

    @staticmethod
    def forward(ctx, run: BackwardPass, index: int, link: torch.Tensor, *params: torch.Tensor):
        ctx.run, ctx.index = run, index
        return _link()

    @staticmethod
    @first_order_only
    def backward(ctx, _link_grad):
        run = ctx.run
        delivered = run.runner.staged.run(ctx.index, run.live)
        names = run.runner.staged_by_stage[ctx.index]
        link_grad = _link() if ctx.needs_input_grad[2] else None
        if link_grad is None:  # nothing before this stage needs a gradient: InputsNode never runs
            run.live.clear()
        return (None, None, link_grad, *[delivered[run.runner.grad_names[name]] for name in names])


class ForwardNode(torch.autograd.Function):
    """Runs the forward graph on detached tensors (the chain owns the real ones). Runs first in
    backward: the output gradients, needed inputs and stash become the pass's live values."""

    @staticmethod
    def forward(ctx, run: BackwardPass, link: torch.Tensor, *tensors: torch.Tensor):
        outputs, stashed = run.runner.forward(tensors)
        ctx.run = run
        ctx.save_for_backward(*tensors, *stashed)  # torch checks they were not modified in place
        ctx.num_inputs = len(tensors)
        ctx.mark_non_differentiable(*run.runner.non_differentiable(outputs))
        return tuple(outputs)

    @staticmethod
    @first_order_only
    def backward(ctx, *output_grads):
        saved = ctx.saved_tensors
        ctx.run.live = ctx.run.runner.backward_feed(saved[: ctx.num_inputs], saved[ctx.num_inputs:], output_grads)
        del saved
        link_grad = _link() if ctx.needs_input_grad[1] else None
        return (None, link_grad, *[None] * ctx.num_inputs)


def apply(runner: TrainingRunner, tensors: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """The forward graph's outputs for ``tensors`` (one per graph input), with the chain behind them."""
    run = BackwardPass(runner)
    by_name = dict(zip(runner.graph_inputs, tensors))
    link = InputsNode.apply(run, *[t for name, t in by_name.items() if name not in runner.staged_inputs])
    for index in reversed(range(len(runner.staged) - 1)):  # the last stage belongs to InputsNode
        link = StageNode.apply(run, index, link, *[by_name[name] for name in runner.staged_by_stage[index]])
    return ForwardNode.apply(run, link, *[t.detach() for t in tensors])
