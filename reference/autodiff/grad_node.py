"""A forward node as a gradient rule sees it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import onnx


@dataclass(frozen=True)
class GradNode:
    """The node's values, the gradients arriving at its outputs, and which input gradients to build.

    Rules build only the gradients in ``wanted`` so branches leading to no trainable input cost nothing.
    """

    proto: onnx.NodeProto
    output_grads: tuple[str | None, ...]
    wanted: tuple[bool, ...]

    @property
    def op_type(self) -> str:
        return self.proto.op_type

    @property
    def name(self) -> str:
        return node_name(self.proto)

    @property
    def num_inputs(self) -> int:
        return len(self.proto.input)

    @property
    def num_outputs(self) -> int:
        return len(self.proto.output)

    def input(self, index: int) -> str:
        """The input's name, or "" when the optional input is absent."""
        return self.proto.input[index] if index < len(self.proto.input) else ""

    def output(self, index: int = 0) -> str:
        return self.proto.output[index] if index < len(self.proto.output) else ""

    def grad(self, index: int = 0) -> str | None:
        return self.output_grads[index] if index < len(self.output_grads) else None

    def wants(self, index: int) -> bool:
        return index < len(self.wanted) and self.wanted[index]

    @property
    def wanted_inputs(self) -> list[int]:
        return [i for i, w in enumerate(self.wanted) if w]

    def attr(self, name: str, default: Any = None) -> Any:
        for attribute in self.proto.attribute:
            if attribute.name == name:
                value = onnx.helper.get_attribute_value(attribute)
                return value.decode() if isinstance(value, bytes) else value
        return default


def node_name(node: onnx.NodeProto) -> str:
    """The node's name, or its first output's when unnamed: what error messages and scopes show."""
    return node.name or node.output[0]
