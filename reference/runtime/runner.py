"""The sessions of one gradient build and how to feed them: the forward graph, then the backward
graph whole or, for gradient delivery as produced, in stages (``reference.grads``)."""
from __future__ import annotations

from typing import Sequence

import torch
from onnx import TensorProto

from reference.autodiff import GradientGraphs
from reference.runtime.session import Session
from reference.runtime.staged_backward import StagedBackward


_FLOAT_TYPES = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16}


class TrainingRunner:
    """``graph_inputs`` are the forward graph's input names in the order tensors are passed to
    :meth:`forward`; the gradient build says which of them get gradients. ``staged``: which graph
    inputs (parameters) get their gradient from the stage that completes it, the others at the end.
    """

    def __init__(self, graphs: GradientGraphs, graph_inputs: Sequence[str], device: str,
                 staged: Sequence[str] = ()):
        self.forward_session = Session(graphs.forward, device)
        # nothing requires grad (no_grad, frozen model): there is no backward graph to run
        has_backward = any(graphs.input_grads.values())
        self.backward_session = Session(graphs.backward, device) if has_backward and not staged else None
        self.graph_inputs = list(graph_inputs)
        self._feed_order = [self.graph_inputs.index(name) for name in self.forward_session.input_names]
        self._num_outputs = len(self.forward_session.output_names) - len(graphs.stashed)
        self._outputs_without_grad = set(graphs.outputs_without_grad)
        self.grad_names = {name: graphs.input_grads.get(name) for name in self.graph_inputs}
        outputs = graphs.forward.graph.output[: self._num_outputs]
        # backward takes one gradient per float output, in output order
        self._float_outputs = [i for i, value in enumerate(outputs) if value.type.tensor_type.elem_type in _FLOAT_TYPES]
        self._backward_sources = self._backward_layout(graphs) if has_backward else {}
        self.staged: StagedBackward | None = None
        self.staged_inputs: set[str] = set()         # graph inputs whose gradients a stage delivers
        self.staged_by_stage: list[list[str]] = []   # per stage, the graph inputs it delivers for
        if has_backward and staged:
            owner = {self.grad_names[name]: name for name in staged if self.grad_names[name]}
            self.staged = StagedBackward(graphs.backward, list(owner), device)
            self.staged_by_stage = [[owner[grad] for grad in stage.delivers] for stage in self.staged.stages]
            self.staged_inputs = set(owner.values())

    def _backward_layout(self, graphs: GradientGraphs) -> dict[str, tuple[str, int]]:
        """For each backward input: ('grad', k), ('input', i) or ('stash', j)."""
        sources = {name: ("grad", k) for k, name in enumerate(graphs.output_grad_names)}
        sources.update({name: ("input", self.graph_inputs.index(name)) for name in graphs.forward_inputs_needed})
        sources.update({name: ("stash", j) for j, name in enumerate(graphs.stashed)})
        return {value.name: sources[value.name] for value in graphs.backward.graph.input}

    def forward(self, inputs: Sequence[torch.Tensor]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        results = self.forward_session.run([inputs[i] for i in self._feed_order])
        return results[: self._num_outputs], results[self._num_outputs:]

    def non_differentiable(self, outputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """The outputs eager gives no ``requires_grad`` (for ``ctx.mark_non_differentiable``): integers,
        and floats no input requiring grad reaches but through a ``detach()`` (or at all)."""
        return [t for i, t in enumerate(outputs) if not t.is_floating_point() or i in self._outputs_without_grad]

    def backward_feed(self, inputs: Sequence[torch.Tensor], stashed: Sequence[torch.Tensor],
                      output_grads: Sequence[torch.Tensor]) -> dict[str, torch.Tensor]:
        """The backward graph's inputs by name."""
        pools = {"grad": [output_grads[i] for i in self._float_outputs], "input": inputs, "stash": stashed}
        return {name: pools[kind][index] for name, (kind, index) in self._backward_sources.items()}

    def backward(self, inputs: Sequence[torch.Tensor], stashed: Sequence[torch.Tensor],
                 output_grads: Sequence[torch.Tensor]) -> list[torch.Tensor | None]:
        """The whole backward graph in one run: a gradient (or None) per graph input."""
        if self.backward_session is None:
            return [None] * len(self.graph_inputs)
        feed = self.backward_feed(inputs, stashed, output_grads)
        results = dict(zip(self.backward_session.output_names,
                           self.backward_session.run([feed[name] for name in self.backward_session.input_names])))
        return [results.get(grad) if grad else None for grad in self.grad_names.values()]
