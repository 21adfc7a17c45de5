"""The autograd bridge: one ``torch.autograd.Function`` runs the forward graph and, on backward,
the gradient graph, handing torch exactly the gradients the graph computed."""
from __future__ import annotations

from typing import Sequence

import torch
from onnx import TensorProto
from torch.autograd.function import once_differentiable

from reference.autodiff import GradientGraphs
from reference.runtime.session import Session


_FLOAT_TYPES = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16}


class TrainingRunner:
    """The two sessions of one gradient build, and how to feed them.

    ``graph_inputs`` are the forward graph's input names in the order tensors are passed to
    :meth:`forward`; ``requires_grad`` says which of them get gradients.
    """

    def __init__(self, graphs: GradientGraphs, graph_inputs: Sequence[str], device: str):
        self.forward_session = Session(graphs.forward, device)
        # nothing requires grad (no_grad, frozen model): there is no backward graph to run
        self.backward_session = Session(graphs.backward, device) if any(graphs.input_grads.values()) else None
        self._graph_inputs = list(graph_inputs)
        self._feed_order = [self._graph_inputs.index(name) for name in self.forward_session.input_names]
        self._num_outputs = len(self.forward_session.output_names) - len(graphs.stashed)
        self._grad_slots = {name: graphs.input_grads.get(name) for name in self._graph_inputs}
        outputs = graphs.forward.graph.output[: self._num_outputs]
        # backward takes one gradient per float output, in output order
        self._float_outputs = [i for i, value in enumerate(outputs) if value.type.tensor_type.elem_type in _FLOAT_TYPES]
        self._backward_feed = self._backward_layout(graphs) if self.backward_session else []

    def _backward_layout(self, graphs: GradientGraphs) -> list[tuple[str, int]]:
        """For each backward input: ('grad', k), ('input', i) or ('stash', j)."""
        sources = {name: ("grad", k) for k, name in enumerate(graphs.output_grad_names)}
        sources.update({name: ("input", self._graph_inputs.index(name)) for name in graphs.forward_inputs_needed})
        sources.update({name: ("stash", j) for j, name in enumerate(graphs.stashed)})
        return [sources[name] for name in self.backward_session.input_names]

    def forward(self, inputs: Sequence[torch.Tensor]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        results = self.forward_session.run([inputs[i] for i in self._feed_order])
        return results[: self._num_outputs], results[self._num_outputs:]

    def backward(self, inputs: Sequence[torch.Tensor], stashed: Sequence[torch.Tensor],
                 output_grads: Sequence[torch.Tensor]) -> list[torch.Tensor | None]:
        if self.backward_session is None:
            return [None] * len(self._graph_inputs)
        pools = {"grad": [output_grads[i] for i in self._float_outputs], "input": inputs, "stash": stashed}
        results = dict(zip(self.backward_session.output_names,
                           self.backward_session.run([pools[kind][index] for kind, index in self._backward_feed])))
        return [results.get(self._grad_slots[name]) if self._grad_slots[name] else None for name in self._graph_inputs]


class OrtGraphFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, runner: TrainingRunner, *inputs: torch.Tensor):
        outputs, stashed = runner.forward(inputs)
        ctx.runner = runner
        ctx.save_for_backward(*inputs, *stashed)
        ctx.num_inputs = len(inputs)
        ctx.mark_non_differentiable(*[t for t in outputs if not t.is_floating_point()])
        return tuple(outputs)

    @staticmethod
    @once_differentiable  # the backward graph runs in onnxruntime: its result has no torch graph
    def backward(ctx, *output_grads: torch.Tensor):
        saved = ctx.saved_tensors
        inputs, stashed = saved[: ctx.num_inputs], saved[ctx.num_inputs:]
        grads = ctx.runner.backward(inputs, stashed, output_grads)
        return (None, *[g if needs else None for g, needs in zip(grads, ctx.needs_input_grad[1:])])
