"""Turn the forward edits and the emitted backward nodes into the two runnable models."""
from __future__ import annotations

from typing import Iterable, Sequence

import onnx
from onnx import helper

from reference.autodiff.context import GradientContext
from reference.autodiff.forward import ForwardModel


def forward_model(forward: ForwardModel, stashed: Iterable[str]) -> onnx.ModelProto:
    """The model with its edited nodes and added Shape nodes, outputting the stashed values last."""
    model = onnx.ModelProto()
    model.CopyFrom(forward.model)
    del model.graph.node[:]
    model.graph.node.extend(forward.nodes + forward.added_nodes)
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True).graph
    types = {v.name: v.type for v in [*inferred.input, *inferred.value_info, *inferred.output]}
    model.graph.output.extend(value_info(name, types.get(name)) for name in stashed)
    return model


def backward_model(
    forward: ForwardModel,
    ctx: GradientContext,
    forward_proto: onnx.ModelProto,
    output_grads: dict[str, str],
    inputs_needed: Sequence[str],
    stashed: Sequence[str],
    input_grads: dict[str, str | None],
) -> onnx.ModelProto:
    """Inputs: output grads, needed forward inputs, stashed values; outputs: the input grads."""
    types = {v.name: v.type for v in [*forward.model.graph.input, *forward_proto.graph.output]}
    inputs = [value_info(grad, forward.value_type(output)) for output, grad in output_grads.items()]
    inputs += [value_info(name, types.get(name)) for name in [*inputs_needed, *stashed]]
    outputs = [value_info(grad, types.get(name)) for name, grad in input_grads.items() if grad is not None]
    graph = helper.make_graph(
        ctx.nodes, f"{forward.model.graph.name}_backward", inputs, outputs, initializer=ctx.initializers
    )
    return helper.make_model(
        graph, opset_imports=list(forward.model.opset_import), ir_version=forward.model.ir_version,
        producer_name="reference.autodiff",
    )


def value_info(name: str, value_type: onnx.TypeProto | None) -> onnx.ValueInfoProto:
    """A graph input/output declaration of ``name`` with ``value_type`` (untyped when None)."""
    value = onnx.ValueInfoProto(name=name)
    if value_type is not None:
        value.type.CopyFrom(value_type)
    return value
