"""Which values need a gradient: the only ones the builder visits.

A value needs one when it depends on a ``requires_grad`` input through differentiable ops (it is
*active*) and some model output depends on it through active values. Everything else, such as shape
arithmetic or a branch that reaches no trainable input, gets no gradient rule at all.
"""
from __future__ import annotations

from typing import Iterable

import onnx

from reference.autodiff.forward import ForwardModel
from reference.autodiff.registry import is_non_differentiable


def values_needing_gradients(forward: ForwardModel, requires_grad: Iterable[str]) -> set[str]:
    reads = {id(node): _reads(node) for node in forward.nodes}
    active = {name for name in requires_grad if forward.is_float(name)}
    for node in forward.nodes:
        if not is_non_differentiable(node) and any(name in active for name in reads[id(node)]):
            active.update(name for name in node.output if name and forward.is_float(name))
    needed = {name for name in forward.output_names if name in active}
    for node in reversed(forward.nodes):
        if any(name in needed for name in node.output):
            needed.update(name for name in reads[id(node)] if name in active)
    return needed


def _reads(node: onnx.NodeProto) -> set[str]:
    """The node's inputs plus the outer values its subgraphs read (If/Loop/Scan bodies capture them),
    so a control-flow node on a differentiable path is seen, and reported as unsupported."""
    names = {name for name in node.input if name}
    for attribute in node.attribute:
        for graph in [attribute.g] if attribute.HasField("g") else list(attribute.graphs):
            names |= _free_names(graph)
    return names


def _free_names(graph: onnx.GraphProto) -> set[str]:
    defined = {value.name for value in graph.input} | {tensor.name for tensor in graph.initializer}
    free = set()
    for node in graph.node:
        free |= _reads(node) - defined
        defined.update(node.output)
    free |= {value.name for value in graph.output} - defined
    return free
