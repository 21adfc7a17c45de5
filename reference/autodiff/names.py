"""Fresh value and node names that never collide with the forward graph's."""
from __future__ import annotations

from typing import Iterable

import onnx


class UniqueNames:
    def __init__(self, taken: Iterable[str] = ()):
        self._taken = set(taken)

    def fresh(self, base: str) -> str:
        """``base`` itself when free, else ``base_<k>`` for the first free k."""
        name, k = base, 0
        while name in self._taken:
            k += 1
            name = f"{base}_{k}"
        self._taken.add(name)
        return name


def graph_names(graph: onnx.GraphProto) -> set[str]:
    """Every value and node name a graph uses: what fresh names must avoid."""
    names = {value.name for value in [*graph.input, *graph.output, *graph.value_info]}
    names.update(tensor.name for tensor in graph.initializer)
    for node in graph.node:
        names.update(node.input)
        names.update(node.output)
        names.add(node.name)
    return names
