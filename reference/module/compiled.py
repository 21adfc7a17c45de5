"""What one graph state compiles to: the export, the gradient build and their sessions.

A graph that calls custom autograd Functions is cut into pieces at export (``pieces``) and runs
through a :class:`~reference.module.pieces.PieceRunner`; otherwise one runner runs it whole. A graph
with guards (:mod:`reference.export.data_guards`) also gets a session of the guards' own graph."""
from __future__ import annotations

import dataclasses
from typing import Sequence

import torch

from reference import grads, recompute
from reference.autodiff import GradientGraphs, build_gradient_graphs
from reference.export import ExportedGraph, ExportError, export_module
from reference.export.data_guards import guard_model
from reference.export.python_calls import DOMAIN as PYTHON_CALLS_DOMAIN, OP as PYTHON_CALL
from reference.export.segments import Piece, split
from reference.module.pieces import PieceRunner
from reference.options import Options
from reference.runtime import TrainingRunner
from reference.runtime.session import Session
from reference.transitions import GraphState


@dataclasses.dataclass
class Compiled:
    exported: ExportedGraph
    pieces: list[Piece] = dataclasses.field(default_factory=list)  # empty: the graph runs whole
    runner: TrainingRunner | PieceRunner | None = None
    gradient_graphs: GradientGraphs | None = None  # before the memory optimizer
    sizes: dict[str, int] = dataclasses.field(default_factory=dict)  # dimension sizes of the build's batch
    memory_report: recompute.MemoryReport | None = None
    guard_session: Session | None = None  # computes the guards' values for a call (None: no guards)
    guarded_sizes: tuple | None = None  # guards following sizes alone: the input sizes their last values are for

    @property
    def graph_inputs(self) -> list[str]:
        return [*self.exported.input_names, *self.exported.state_names]


def export(module: torch.nn.Module, tensors: list[torch.Tensor], state: GraphState) -> Compiled:
    exported = export_module(module, tensors, state.schema, training=state.training)
    compiled = Compiled(exported, split(exported.model, exported.python_calls))
    if exported.guard_values:
        model = guard_model(exported.model, exported.guard_names)
        if any(node.domain == PYTHON_CALLS_DOMAIN and node.op_type == PYTHON_CALL for node in model.graph.node):
            raise ExportError("a value the trace turned into control flow is computed by a custom autograd Function; "
                              "its guard graph cannot call back into torch")
        compiled.guard_session = Session(model, state.device)
        compiled.guarded_sizes = _input_sizes(compiled, tensors)
    return compiled


def guard_values(compiled: Compiled, tensors: Sequence[torch.Tensor], previous: tuple) -> tuple[tuple, ...] | str:
    """The guards' values for this call (``tensors``: one per graph input; ``previous``: their last
    values), as the export recorded them. A guard may be computed after another one's baked value (a branch per expert hit, after
    the count of experts hit): where that value changed, the guard graph can fail to run (a split
    into the traced count); that failure means a guard changed, and the export that follows is
    what reports any real error in the inputs."""
    sizes = _input_sizes(compiled, tensors)
    if sizes is not None and sizes == compiled.guarded_sizes:
        return previous  # guards on sizes alone, at the sizes they were computed for: no run needed
    session = compiled.guard_session
    feeds = [tensors[compiled.graph_inputs.index(name)].detach() for name in session.input_names]
    try:
        values = tuple(tuple(value.tolist()) for value in session.run(feeds))
    except Exception as error:  # onnxruntime's pybind errors share no base class beyond Exception
        return f"the guard graph failed to run: {str(error).splitlines()[0]}"
    compiled.guarded_sizes = sizes
    return values


def _input_sizes(compiled: Compiled, tensors: Sequence[torch.Tensor]) -> tuple | None:
    """The user inputs' sizes where every guard follows sizes alone (None: some guard reads values)."""
    if not compiled.exported.guards_follow_sizes:
        return None
    return tuple(tuple(t.shape) for t in tensors[:len(compiled.exported.input_names)])


def user_outputs(compiled: Compiled, outputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """The graph's outputs without its guards (which the wrapper reads from the guard graph)."""
    return list(outputs)[: len(outputs) - len(compiled.exported.guard_values)]


def run(compiled: Compiled, tensors: Sequence[torch.Tensor]) -> Sequence[torch.Tensor]:
    """The graph's outputs for ``tensors`` (one per graph input), gradients wired into autograd."""
    if isinstance(compiled.runner, PieceRunner):
        return compiled.runner.run(tensors)
    return grads.run(compiled.runner, tensors)


def build(compiled: Compiled, state: GraphState, trainable_keys: set[str], tensors: Sequence[torch.Tensor],
          options: Options) -> None:
    exported = compiled.exported
    wanted = [name for name, needs in zip(exported.input_names, state.inputs_requiring_grad) if needs]
    wanted += [name for name, key in zip(exported.state_names, exported.state_keys) if key in trainable_keys]
    read = {value.name for value in exported.model.graph.input}
    wanted = [name for name in wanted if name in read]  # one the graph never reads gets None, as in eager
    staged = [name for name, key in zip(exported.state_names, exported.state_keys)
              if key in trainable_keys] if options.mem_efficient_grad else []
    compiled.sizes = {f"{name}_dim{d}": size for name, t in zip(exported.input_names, tensors)
                      for d, size in enumerate(t.shape)}
    compiled.memory_report = None
    if compiled.pieces:
        if options.recomputes:
            names = ", ".join(dict.fromkeys(call.name for call in exported.python_calls))
            raise ExportError(f"the memory optimizer (memory_opt_level/memory_opt_config) does not plan across "
                              f"custom autograd Functions, and this graph calls {names}")
        compiled.runner = PieceRunner(compiled.pieces, compiled.graph_inputs, exported.output_names, wanted,
                                      state.device, staged)
        return
    graphs = build_gradient_graphs(exported.model, wanted)
    compiled.gradient_graphs = graphs
    if options.recomputes:
        graphs, compiled.memory_report = recompute.optimize(
            graphs, options.memory_opt_level, options.memory_opt_entries, compiled.sizes)
    compiled.runner = TrainingRunner(graphs, compiled.graph_inputs, state.device, staged)


def memory_report(compiled: Compiled) -> recompute.MemoryReport:
    """The plan table of the built graph (computed on demand when nothing was recomputed)."""
    if compiled.memory_report is None:
        _, compiled.memory_report = recompute.optimize(compiled.gradient_graphs, 0, (), compiled.sizes)
    return compiled.memory_report
