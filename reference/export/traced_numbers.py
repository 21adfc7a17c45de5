"""Python numbers the tracer turned into tensors: sizes, and integers computed from them.

Under the TorchScript tracer ``x.shape[0]`` is a 0-d int64 tensor and ``x.shape`` a ``torch.Size``
of them, so a module returning them (``{"rows": x.shape[0]}``) returns tensors where eager returns
Python values. We tell them from the user's tensors by provenance in the trace: a value computed
from ``aten::size`` results and constants alone, through integer arithmetic. They become
:class:`~reference.nested_io.GraphNumber` outputs: the graph computes them for every size, and the
user gets an ``int`` or a ``torch.Size`` back. A float computed from sizes (``x.shape[0] / 2``) is
refused: the tracer computes it in float32 where eager's Python float is a double.
"""
from __future__ import annotations

from typing import Any

import torch
import torch.utils._pytree as pytree

from reference.export.errors import ExportError
from reference.nested_io import GraphNumber, TracedNumber
from reference.nested_io.containers import register_if_container

_SIZE_ARITHMETIC = frozenset({
    "prim::NumToTensor", "prim::Constant", "aten::Int", "aten::add", "aten::sub", "aten::mul", "aten::neg",
    "aten::floor_divide", "aten::floordiv", "aten::remainder", "aten::div",
})


def marked(outputs: Any) -> Any:
    """``outputs`` with every traced size-derived number wrapped in a :class:`TracedNumber`."""
    if torch._C._get_tracing_state() is None:
        return outputs
    leaves, tree = pytree.tree_flatten(outputs, is_leaf=register_if_container)
    return pytree.tree_unflatten([_marked(leaf) for leaf in leaves], tree)


def _marked(leaf: Any) -> Any:
    if isinstance(leaf, torch.Size) and len(leaf) and all(isinstance(s, torch.Tensor) for s in leaf):
        return TracedNumber(torch.stack(list(leaf)), GraphNumber("size"))
    if isinstance(leaf, torch.Tensor) and leaf.dim() == 0 and _from_sizes(leaf):
        if leaf.is_floating_point():
            raise ExportError(f"an output is a Python float computed from input sizes ({leaf.item()!r}); the trace "
                              "computes it in float32 where eager's is a double: return it as a tensor or an int")
        return TracedNumber(leaf, GraphNumber("int"))
    return leaf


def _from_sizes(tensor: torch.Tensor) -> bool:
    """Whether the trace computed ``tensor`` from ``aten::size`` results and constants alone."""
    try:
        stack = [torch._C._get_value_trace(tensor).node()]
    except RuntimeError:  # not a value of this trace
        return False
    reached_a_size, seen = False, set()
    while stack:
        node = stack.pop()
        if node in seen:  # size arithmetic reuses values: visit each node once
            continue
        seen.add(node)
        if node.kind() == "aten::size":
            reached_a_size = True  # its input is a tensor whose *values* it does not read
            continue
        if node.kind() not in _SIZE_ARITHMETIC:
            return False
        stack.extend(value.node() for value in node.inputs())
    return reached_a_size
