"""What one graph state compiles to: the export, the gradient build and their sessions."""
from __future__ import annotations

import dataclasses

import torch

from reference.autodiff import build_gradient_graphs
from reference.export import ExportedGraph, export_module
from reference.runtime import TrainingRunner
from reference.transitions import GraphState


@dataclasses.dataclass
class Compiled:
    exported: ExportedGraph
    runner: TrainingRunner | None = None

    @property
    def graph_inputs(self) -> list[str]:
        return [*self.exported.input_names, *self.exported.state_names]


def export(module: torch.nn.Module, tensors: list[torch.Tensor], state: GraphState) -> Compiled:
    return Compiled(export_module(module, tensors, state.schema, training=state.training))


def build(compiled: Compiled, state: GraphState, trainable_keys: set[str]) -> None:
    exported = compiled.exported
    wanted = [name for name, needs in zip(exported.input_names, state.inputs_requiring_grad) if needs]
    wanted += [name for name, key in zip(exported.state_names, exported.state_keys) if key in trainable_keys]
    graphs = build_gradient_graphs(exported.model, wanted)
    compiled.runner = TrainingRunner(graphs, compiled.graph_inputs, state.device)
