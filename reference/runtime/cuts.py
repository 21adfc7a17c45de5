"""The backward graph cut into stages, one ending wherever parameter gradients become complete.

Pure graph work, no sessions (``staged_backward`` runs them); it lives in the runtime stage, below
``reference.grads``, which only consumes the stages. Run in order, the stages compute what the
whole backward graph computes, but after each one the gradients it completed can go to torch and
every value no later stage reads can be freed: the graph never holds all parameter gradients (nor
all stashed activations) at once. Cuts follow the graph's node order, a topological order in which
the autodiff stage emits the last layer's gradients first.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import onnx

from reference.export.reads import reads


@dataclasses.dataclass
class Stage:
    nodes: list[onnx.NodeProto]
    inputs: list[str]    # values it reads from the graph's inputs or from earlier stages
    outputs: list[str]   # values it makes that later stages or the caller read
    delivers: list[str]  # gradients complete once it has run
    drops: list[str]     # values nothing after it reads: freed once it has run
    handed_over: list[str] = dataclasses.field(default_factory=list)  # delivered, read by nothing later


def cut(graph: onnx.GraphProto, delivered: Sequence[str]) -> list[list[onnx.NodeProto]]:
    """Node lists, a cut after each node that completes one of ``delivered``; the last list holds
    the nodes after the last cut (it may be empty)."""
    wanted, groups, current = set(delivered), [], []
    for node in graph.node:
        current.append(node)
        if wanted.intersection(node.output):
            groups.append(current)
            current = []
    return [*groups, current]


def plan(graph: onnx.GraphProto, delivered: Sequence[str]) -> list[Stage]:
    """Stages over ``graph`` with what each reads, hands on, delivers and frees. A delivered name
    no node makes (a graph input passed through) is delivered by a first, empty stage; the last
    stage delivers nothing; the graph's other outputs are kept to the end."""
    groups = cut(graph, delivered)
    if set(delivered) - {name for node in graph.node for name in node.output}:
        groups.insert(0, [])  # passed through from the graph's inputs: ready before any node runs
    constants = {t.name for t in graph.initializer}
    made_at = {name: 0 for name in [v.name for v in graph.input]}
    for index, nodes in enumerate(groups):
        made_at.update({name: index for node in nodes for name in node.output})
    last_read: dict[str, int] = {}
    for index, nodes in enumerate(groups):
        for node in nodes:
            last_read.update({name: index for name in reads(node) if name not in constants})
    kept = {v.name for v in graph.output} - set(delivered)
    stages = []
    for index, nodes in enumerate(groups):
        made = {name for node in nodes for name in node.output}
        inputs = sorted({name for node in nodes for name in reads(node)} - made - constants)
        later = {name for name, at in last_read.items() if at > index} | kept | set(delivered)
        stages.append(Stage(
            nodes, inputs, sorted(made & later),
            delivers=[name for name in delivered if made_at.get(name, 0) == index],
            drops=sorted(name for name, at in last_read.items() if at == index and name not in kept)))
    for index, stage in enumerate(stages):
        stage.handed_over = [name for name in stage.delivers if last_read.get(name, -1) <= index]
    return stages
