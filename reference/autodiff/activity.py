"""Which values need a gradient: the only ones the builder visits.

A value needs one when it depends on a ``requires_grad`` input through differentiable ops (it is
*active*) and some model output depends on it through active values. Everything else, such as shape
arithmetic or a branch that reaches no trainable input, gets no gradient rule at all.
"""
from __future__ import annotations

from typing import Callable, Iterable

import onnx

from reference.autodiff.forward import ForwardModel
from reference.autodiff.registry import is_non_differentiable
from reference.export.detach import DOMAIN as STOP_GRADIENT_DOMAIN, OP as STOP_GRADIENT
from reference.export.reads import reads


def _computed_from(forward: ForwardModel, sources: Iterable[str], passes: Callable[[onnx.NodeProto], bool],
                   kept: Callable[[str], bool] = bool) -> set[str]:
    """``sources`` and the values computed from them by the nodes ``passes`` lets through (those ``kept``)."""
    reached = set(sources)
    for node in forward.nodes:
        if passes(node) and any(name in reached for name in reads(node)):
            reached.update(name for name in node.output if name and kept(name))
    return reached


def values_needing_gradients(forward: ForwardModel, requires_grad: Iterable[str]) -> set[str]:
    active = _computed_from(forward, [name for name in requires_grad if forward.is_float(name)],
                            lambda node: not is_non_differentiable(node), forward.is_float)
    needed = {name for name in forward.output_names if name in active}
    for node in reversed(forward.nodes):
        if any(name in needed for name in node.output):
            needed.update(name for name in reads(node) if name in active)
    return needed


def outputs_without_grad(forward: ForwardModel, requires_grad: Iterable[str]) -> tuple[int, ...]:
    """The model outputs (by index) eager would not give ``requires_grad``: floats that read no
    ``requires_grad`` input except through ``reference.StopGradient`` (a ``detach()``, a ``no_grad``
    region, a statistic eager does not differentiate) or not at all (a constant).

    Not "inactive": an aten op the exporter decomposes through non-differentiable ONNX ops is still
    differentiable in eager (``norm(x, 0)`` counts through ``Equal``: it requires grad, its gradient
    is none). So a float made from a comparison or an ``argmax`` here requires grad where eager's
    does not (its gradient is none in both)."""
    reached = _computed_from(forward, requires_grad,
                             lambda node: (node.domain, node.op_type) != (STOP_GRADIENT_DOMAIN, STOP_GRADIENT))
    return tuple(i for i, name in enumerate(forward.output_names) if forward.is_float(name) and name not in reached)
