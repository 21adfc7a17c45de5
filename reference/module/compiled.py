"""What one graph state compiles to: the export, the gradient build and their sessions."""
from __future__ import annotations

import dataclasses
from typing import Sequence

import torch

from reference import recompute
from reference.autodiff import GradientGraphs, build_gradient_graphs
from reference.export import ExportedGraph, export_module
from reference.options import Options
from reference.runtime import TrainingRunner
from reference.transitions import GraphState


@dataclasses.dataclass
class Compiled:
    exported: ExportedGraph
    runner: TrainingRunner | None = None
    gradient_graphs: GradientGraphs | None = None  # before the memory optimizer
    sizes: dict[str, int] = dataclasses.field(default_factory=dict)  # dimension sizes of the build's batch
    memory_report: recompute.MemoryReport | None = None

    @property
    def graph_inputs(self) -> list[str]:
        return [*self.exported.input_names, *self.exported.state_names]


def export(module: torch.nn.Module, tensors: list[torch.Tensor], state: GraphState) -> Compiled:
    return Compiled(export_module(module, tensors, state.schema, training=state.training))


def build(compiled: Compiled, state: GraphState, trainable_keys: set[str], tensors: Sequence[torch.Tensor],
          options: Options) -> None:
    exported = compiled.exported
    wanted = [name for name, needs in zip(exported.input_names, state.inputs_requiring_grad) if needs]
    wanted += [name for name, key in zip(exported.state_names, exported.state_keys) if key in trainable_keys]
    graphs = build_gradient_graphs(exported.model, wanted)
    compiled.gradient_graphs = graphs
    compiled.sizes = {f"{name}_dim{d}": size for name, t in zip(exported.input_names, tensors)
                      for d, size in enumerate(t.shape)}
    compiled.memory_report = None
    if options.recomputes:
        graphs, compiled.memory_report = recompute.optimize(
            graphs, options.memory_opt_level, options.memory_opt_config, compiled.sizes)
    staged = [name for name, key in zip(exported.state_names, exported.state_keys)
              if key in trainable_keys] if options.mem_efficient_grad else []
    compiled.runner = TrainingRunner(graphs, compiled.graph_inputs, state.device, staged)


def memory_report(compiled: Compiled) -> recompute.MemoryReport:
    """The plan table of the built graph (computed on demand when nothing was recomputed)."""
    if compiled.memory_report is None:
        _, compiled.memory_report = recompute.optimize(compiled.gradient_graphs, 0, (), compiled.sizes)
    return compiled.memory_report
