"""Which values need a gradient: the only ones the builder visits.

A value needs one when it depends on a ``requires_grad`` input through differentiable ops (it is
*active*) and some model output depends on it through active values. Everything else, such as shape
arithmetic or a branch that reaches no trainable input, gets no gradient rule at all.
"""
from __future__ import annotations

from typing import Iterable

from reference.autodiff.forward import ForwardModel
from reference.autodiff.registry import is_non_differentiable
from reference.export.reads import reads


def values_needing_gradients(forward: ForwardModel, requires_grad: Iterable[str]) -> set[str]:
    read = {id(node): set(reads(node)) for node in forward.nodes}
    active = {name for name in requires_grad if forward.is_float(name)}
    for node in forward.nodes:
        if not is_non_differentiable(node) and any(name in active for name in read[id(node)]):
            active.update(name for name in node.output if name and forward.is_float(name))
    needed = {name for name in forward.output_names if name in active}
    for node in reversed(forward.nodes):
        if any(name in needed for name in node.output):
            needed.update(name for name in read[id(node)] if name in active)
    return needed
