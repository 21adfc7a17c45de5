"""Apply occurrences: clone their subgraphs into the backward graph and stop stashing their outputs.

Clones are named ``<forward name>_recompute``; only backward's consumers are rewired, the forward
graph computes what it always did and merely outputs less. A cloned Dropout must not draw a new
mask: it becomes ``x / (1 - ratio) * Cast(mask)`` over the stashed mask, which is bit for bit what
onnxruntime's CPU Dropout kernel computes (``mask * x / (1 - ratio)``, signed zeros included;
measured: ``x * (1 / (1 - ratio))`` is not; its CUDA kernel computes the latter, and CUDA sessions
get that form: ``reference.runtime.kernel_forms.cuda_dropout``). The mask goes last so onnxruntime cannot fuse the division by a
constant into a following MatMul (MatMulScaleFusion), which would round differently.
"""
from __future__ import annotations

import dataclasses

from typing import Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

from reference.autodiff import GradientGraphs
from reference.autodiff.assemble import value_info
from reference.autodiff.names import UniqueNames, graph_names
from reference.recompute.graph import ForwardFacts
from reference.recompute.plans import Occurrence
from reference.seams import Seam

# Fault injection (reference.seams): True recomputes a Dropout by running it again, a new mask.
DROPOUT_RERUN = Seam("recomputed Dropout draws a new mask", False)
# The names of a recomputed Dropout's division and masking nodes end so: CUDA's kernel computes in
# another order, and reference.runtime.kernel_forms.cuda_dropout rewrites them for it.
DROPOUT_SCALE, DROPOUT_MASK = "/Scale", "/Mask"


def apply(facts: ForwardFacts, occurrences: Sequence[Occurrence]) -> GradientGraphs:
    graphs = facts.graphs
    if not occurrences:
        return graphs
    names = UniqueNames(graph_names(graphs.forward.graph) | graph_names(graphs.backward.graph))
    removed = {name for occurrence in occurrences for name in occurrence.outputs}
    clones = {id(node): node for occurrence in occurrences for node in occurrence.subgraph}
    ordered = sorted(clones.values(), key=lambda node: facts.order[id(node)])
    renamed = {out: names.fresh(f"{out}_recompute") for node in ordered for out in node.output if out}

    new_nodes, constants, initializers, inputs_needed, leaves = [], {}, {}, set(), set()
    for node in ordered:
        for name in node.input:
            if not name or name in renamed:
                continue
            if name in facts.inputs:
                inputs_needed.add(name)
            elif name in facts.initializers:
                initializers[name] = facts.initializers[name]
            elif facts.constant(name) is not None:
                constants[name] = facts.producer[name]
            elif name not in facts.stashed or name in removed:
                leaves.add(name)
        new_nodes += _clone(facts, node, renamed, names)

    backward = onnx.ModelProto()
    backward.CopyFrom(graphs.backward)
    body = backward.graph
    present_initializers = {tensor.name for tensor in body.initializer}
    present_outputs = {out for node in body.node for out in node.output}
    for node in body.node:
        for k, name in enumerate(node.input):
            if name in removed:
                node.input[k] = renamed[name]
    first_reader = next((k for k, node in enumerate(body.node) if any(n in renamed.values() for n in node.input)),
                        len(body.node))
    head = [node for name, node in constants.items() if name not in present_outputs]
    nodes = head + list(body.node[:first_reader]) + new_nodes + list(body.node[first_reader:])
    del body.node[:]
    body.node.extend(nodes)
    body.initializer.extend(t for name, t in initializers.items() if name not in present_initializers)
    _import_domains(backward, graphs.forward, new_nodes)

    stashed = tuple(name for name in graphs.stashed if name not in removed)
    stashed += tuple(sorted(leaves - set(stashed), key=lambda n: facts.order[id(facts.producer[n])]))
    wanted = set(graphs.forward_inputs_needed) | inputs_needed
    needed = tuple(value.name for value in graphs.forward.graph.input if value.name in wanted)
    backward_inputs = [*graphs.output_grad_names, *needed, *stashed]
    existing = {value.name: value for value in body.input}
    del body.input[:]
    body.input.extend(existing.get(name) or value_info(name, facts.types[name]) for name in backward_inputs)

    forward = onnx.ModelProto()
    forward.CopyFrom(graphs.forward)
    num_outputs = len(graphs.forward.graph.output) - len(graphs.stashed)
    outputs = {value.name: value for value in forward.graph.output}
    model_outputs = list(forward.graph.output[:num_outputs])
    del forward.graph.output[:]
    forward.graph.output.extend(model_outputs + [outputs.get(name) or value_info(name, facts.types[name]) for name in stashed])
    return dataclasses.replace(graphs, forward=forward, backward=backward, forward_inputs_needed=needed, stashed=stashed)


def _import_domains(backward: onnx.ModelProto, forward: onnx.ModelProto, nodes: Sequence[onnx.NodeProto]) -> None:
    """The forward's opset of each domain a clone brings along (a fused ``com.microsoft`` product) that
    backward did not import: without it the graph is invalid (ONNX's shape inference refuses it)."""
    imported = {entry.domain or "ai.onnx" for entry in backward.opset_import}
    used = {node.domain or "ai.onnx" for node in nodes}
    backward.opset_import.extend(entry for entry in forward.opset_import
                                 if (entry.domain or "ai.onnx") in used - imported)


def _clone(facts: ForwardFacts, node: onnx.NodeProto, renamed: dict[str, str], names: UniqueNames) -> list[onnx.NodeProto]:
    if node.op_type == "Dropout" and not node.domain and not DROPOUT_RERUN.value:
        return _dropout_from_mask(facts, node, [renamed.get(name, name) for name in node.input], renamed, names)
    return _clone_exactly(facts, node, renamed, names)


def _clone_exactly(facts: ForwardFacts, node: onnx.NodeProto, renamed: dict[str, str], names: UniqueNames) -> list[onnx.NodeProto]:
    inputs = [renamed.get(name, name) for name in node.input]
    clone = onnx.NodeProto()
    clone.CopyFrom(node)
    clone.name = names.fresh(f"{node.name or node.output[0]}_recompute")
    del clone.input[:]
    clone.input.extend(inputs)
    del clone.output[:]
    clone.output.extend(renamed.get(name, "") if name else "" for name in node.output)
    return [clone]


def _dropout_from_mask(facts, node, inputs, renamed, names) -> list[onnx.NodeProto]:
    x, mask = inputs[0], node.output[1]
    ratio = _dropout_ratio(facts, node)
    dtype = helper.tensor_dtype_to_np_dtype(facts.elem_type(node.input[0]))
    keep_name = names.fresh(f"{node.name}_recompute_keep")
    keep = np.array(np.float32(1.0) - np.float32(ratio), dtype=dtype)
    base = names.fresh(f"{node.name}_recompute")
    kept, scaled = names.fresh(f"{base}_mask"), names.fresh(f"{base}_scaled")
    return [
        helper.make_node("Constant", [], [keep_name], name=f"{keep_name}_node", value=numpy_helper.from_array(keep)),
        helper.make_node("Cast", [mask], [kept], name=f"{base}/Cast", to=facts.elem_type(node.input[0])),
        helper.make_node("Div", [x, keep_name], [scaled], name=f"{base}{DROPOUT_SCALE}"),
        helper.make_node("Mul", [scaled, kept], [renamed[node.output[0]]], name=f"{base}{DROPOUT_MASK}"),
    ]


def _dropout_ratio(facts: ForwardFacts, node: onnx.NodeProto) -> float:
    if len(node.input) < 2 or not node.input[1]:
        return 0.5  # the ONNX default
    value = facts.constant(node.input[1])
    if value is None and node.input[1] in facts.initializers:
        value = numpy_helper.to_array(facts.initializers[node.input[1]])
    if value is None:
        raise ValueError(f"Dropout '{node.name}' has a ratio computed at run time; it cannot be recomputed from its mask")
    return float(value)
