"""The backward graph run stage by stage (``cuts`` plans them), one session per stage, over
a dict of live values, so gradients can leave after the stage that completes them."""
from __future__ import annotations

from typing import Sequence

import onnx
import torch
from onnx import helper

from reference.export.reads import reads
from reference.runtime.cuts import plan
from reference.runtime.session import Session


def _type_of(ort_type: str) -> onnx.TypeProto:
    """``tensor(float)`` -> a tensor type of unknown shape: stages serve every batch size."""
    elem = ort_type.removeprefix("tensor(").removesuffix(")").upper()
    return helper.make_tensor_type_proto(getattr(onnx.TensorProto, elem), shape=None)


class StagedBackward:
    """Each stage's output types come from its own session, and type the later stages' inputs.
    Sessions run without a memory arena: one pool per stage would each keep its high-water mark."""

    def __init__(self, model: onnx.ModelProto, delivered: Sequence[str], device: str):
        graph = model.graph
        types = {v.name: v.type for v in graph.input}
        self.stages = plan(graph, delivered)
        self.sessions: list[Session | None] = []
        for index, stage in enumerate(self.stages):
            used = {name for node in stage.nodes for name in reads(node)}
            stage_graph = helper.make_graph(
                stage.nodes, f"{graph.name}_stage{index}",
                [helper.make_value_info(name, types[name]) for name in stage.inputs],
                [onnx.ValueInfoProto(name=name) for name in stage.outputs],
                initializer=[t for t in graph.initializer if t.name in used])
            stage_model = helper.make_model(stage_graph, opset_imports=list(model.opset_import),
                                            ir_version=model.ir_version)
            session = Session(stage_model, device, arena=False) if stage.nodes else None
            if session is not None:
                types.update(zip(session.output_names, map(_type_of, session.output_types)))
            self.sessions.append(session)

    def __len__(self) -> int:
        return len(self.stages)

    def run(self, index: int, live: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Run stage ``index`` on ``live`` (updated in place: its outputs added, values nothing later
        reads removed) and return the gradients it completed."""
        stage, session = self.stages[index], self.sessions[index]
        if session is not None:
            live.update(zip(session.output_names, session.run([live[name] for name in stage.inputs])))
        delivered = {name: live[name] for name in stage.delivers}
        for name in [*stage.drops, *stage.handed_over]:
            live.pop(name, None)
        return delivered
