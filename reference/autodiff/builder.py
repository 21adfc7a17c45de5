"""The gradient builder: a plain reverse loop over the forward nodes, one registered rule per op."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import onnx

from reference.autodiff import assemble, rules  # noqa: F401  (importing rules registers them)
from reference.autodiff.accumulate import GradientSums
from reference.autodiff.activity import outputs_without_grad, values_needing_gradients
from reference.autodiff.context import GradientContext
from reference.autodiff.forward import ForwardModel
from reference.autodiff.fuse import fuse
from reference.autodiff.fuse.graph import onnx_opset
from reference.autodiff.grad_node import MIN_OPSET, GradNode, node_name
from reference.autodiff.model_cache import per_graph
from reference.autodiff.names import UniqueNames, graph_names
from reference.autodiff.registry import generation, rule_for
from reference.seams import any_overridden


@dataclass(frozen=True)
class GradientGraphs:
    forward: onnx.ModelProto  # same inputs as the model; outputs = model outputs, then stashed values
    backward: onnx.ModelProto  # inputs: output_grad_names, forward_inputs_needed, stashed
    output_grad_names: tuple[str, ...]  # dL/d(output) inputs of backward, one per float model output, in order
    forward_inputs_needed: tuple[str, ...]  # model inputs the backward graph reads, in model order
    stashed: tuple[str, ...]  # values the forward graph additionally outputs for backward, in forward order
    input_grads: dict[str, str | None]  # requested input -> backward output, None if no path to an output
    # float model outputs (by index) eager gives no requires_grad (activity.outputs_without_grad)
    outputs_without_grad: tuple[int, ...] = ()


def build_gradient_graphs(model: onnx.ModelProto, requires_grad: Sequence[str]) -> GradientGraphs:
    """Split ``model`` into a forward graph that stashes what backward needs and a backward graph
    producing the gradients of the ``requires_grad`` inputs. Built once per (graph, inputs, rules
    registered) while no fault is injected (:mod:`reference.autodiff.model_cache`); each caller gets
    its own copy."""
    return _built(model, tuple(dict.fromkeys(requires_grad)), generation())


def _copied(graphs: GradientGraphs) -> GradientGraphs:
    forward, backward = onnx.ModelProto(), onnx.ModelProto()
    forward.CopyFrom(graphs.forward)
    backward.CopyFrom(graphs.backward)
    return replace(graphs, forward=forward, backward=backward, input_grads=dict(graphs.input_grads))


@per_graph(copy=_copied, unless=any_overridden)
def _built(model: onnx.ModelProto, requires_grad: tuple[str, ...], rules_generation: int) -> GradientGraphs:
    _check_arguments(model, requires_grad)
    names = UniqueNames(graph_names(model.graph))
    forward = ForwardModel(model, names)
    needed = values_needing_gradients(forward, requires_grad)
    ctx = GradientContext(forward, names)
    sums = GradientSums(ctx)

    float_outputs = [output for output in forward.output_names if forward.is_float(output)]
    output_grads = {output: names.fresh(f"{output}_grad") for output in float_outputs}
    for output, grad in output_grads.items():
        if output in needed:
            sums.add(output, grad)

    differentiated = [node for node in forward.nodes if any(output in needed for output in node.output)]
    opsets = {("" if entry.domain == "ai.onnx" else entry.domain): entry.version for entry in model.opset_import}
    rules_by_node = {id(node): rule_for(node, node_name(node), opsets.get(node.domain, 1))
                     for node in differentiated}  # fail before building
    for proto in reversed(differentiated):
        node = GradNode(
            proto,
            tuple(sums.total(output) if output in needed else None for output in proto.output),
            tuple(name in needed for name in proto.input),
            opsets.get(proto.domain, 1),
        )
        ctx.scope = node.name
        grads = rules_by_node[id(proto)](ctx, node)
        for i in node.wanted_inputs:
            if not grads.get(i):
                raise AssertionError(f"the {proto.op_type} rule built no gradient for input {i} of '{node.name}'")
            sums.add(proto.input[i], grads[i])

    input_grads = {
        name: ctx.expose(sums.total(name), names.fresh(f"{name}_grad")) if name in needed else None
        for name in requires_grad
    }
    order = forward.producer_order()
    stashed = tuple(sorted(ctx.stashed, key=order.__getitem__))
    inputs_needed = tuple(name for name in forward.input_names if name in set(ctx.needed_inputs))
    # Fused here, before the memory optimizer plans: every recompute level then runs these graphs.
    forward_proto = fuse(assemble.forward_model(forward, stashed))
    backward_proto = fuse(assemble.backward_model(
        forward, ctx, forward_proto, output_grads, inputs_needed, stashed, input_grads
    ))
    return GradientGraphs(
        forward_proto, backward_proto, tuple(output_grads.values()), inputs_needed, stashed, input_grads,
        outputs_without_grad(forward, requires_grad)
    )


def _check_arguments(model: onnx.ModelProto, requires_grad: tuple[str, ...]) -> None:
    unknown = sorted(set(requires_grad) - {value.name for value in model.graph.input})
    if unknown:
        raise ValueError(f"requires_grad names are not model inputs: {unknown}")
    opset = onnx_opset(model)
    if opset < MIN_OPSET:
        raise ValueError(f"the model uses opset {opset}; gradient graphs need opset >= {MIN_OPSET}")
