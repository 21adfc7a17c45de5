"""A forward node as a gradient rule sees it."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import onnx

MIN_OPSET = 18  # rules emit ops with opset-18 signatures (axes as inputs of Reduce*, Pad's axes)


@dataclass(frozen=True)
class GradNode:
    """The node's values, the gradients arriving at its outputs, and which input gradients to build.

    Rules build only the gradients in ``wanted`` so branches leading to no trainable input cost nothing.
    """

    proto: onnx.NodeProto
    output_grads: tuple[str | None, ...]
    wanted: tuple[bool, ...]
    opset: int = MIN_OPSET  # of the node's domain in the model: attribute defaults depend on it

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
        """The attribute's value; when the node omits it, the default the op's ONNX schema declares
        for this opset, else ``default`` (for attributes without a declared default, e.g. ``axes``)."""
        for attribute in self.proto.attribute:
            if attribute.name == name:
                return _value(attribute)
        declared = schema_default(self.op_type, self.proto.domain, self.opset, name)
        return default if declared is None else declared


@functools.lru_cache(maxsize=None)
def schema_default(op_type: str, domain: str, opset: int, name: str) -> Any:
    """The default ONNX's schema declares for attribute ``name`` of ``op_type`` at ``opset`` (None: none)."""
    try:
        schema = onnx.defs.get_schema(op_type, opset, domain)
    except onnx.defs.SchemaError:  # e.g. com.microsoft ops onnx does not know
        return None
    attribute = schema.attributes.get(name)
    if attribute is None or attribute.default_value.type == onnx.AttributeProto.UNDEFINED:
        return None
    return _value(attribute.default_value)


def _value(attribute: onnx.AttributeProto) -> Any:
    value = onnx.helper.get_attribute_value(attribute)
    return value.decode() if isinstance(value, bytes) else value


def node_name(node: onnx.NodeProto) -> str:
    """The node's name, or its first output's when unnamed: what error messages and scopes show."""
    return node.name or node.output[0]
