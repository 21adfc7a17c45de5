"""What a flattened structure looks like without its tensors.

Two inputs with equal schemas can share one exported graph: sizes are dynamic axes, so a
:class:`TensorSpec` keeps only dtype, rank and device. Non-tensor leaves are baked into the graph,
so a :class:`Constant` compares by exact value and type (``True`` != ``1``, ``0.0`` != ``-0.0``).
Which tensors require grad does not change the forward graph; it is recorded beside the schema
(``requires_grad``) for the transitions stage, outside equality.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import torch
import torch.utils._pytree as pytree

from reference.seams import Seam

# Fault injection (reference.seams): True compares int/float constants by type alone, as
# ORTModule's schema does, so a graph traced with one number serves another.
NUMBERS_BY_TYPE = Seam("int/float constants compared by type alone", False)


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    dtype: torch.dtype
    rank: int
    device_type: str

    @classmethod
    def of(cls, tensor: torch.Tensor) -> "TensorSpec":
        return cls(tensor.dtype, tensor.dim(), tensor.device.type)


class Constant:
    """A non-tensor leaf, compared by type and exact value (NaN equals NaN, -0.0 differs from 0.0)."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def _key(self):
        value = self.value
        if NUMBERS_BY_TYPE.value and isinstance(value, (int, float)) and not isinstance(value, bool):
            return (type(value), None)
        return (type(value), value.hex() if isinstance(value, float) else value)

    def __eq__(self, other):
        return isinstance(other, Constant) and self._key() == other._key()

    def __hash__(self):
        try:
            return hash(self._key())
        except TypeError:  # unhashable user objects still compare by value
            return hash(type(self.value))

    def __repr__(self):
        return f"Constant({self.value!r})"


@dataclasses.dataclass(frozen=True)
class GraphNumber:
    """A Python ``int`` or ``torch.Size`` the graph computes from the input sizes (``x.shape[0]``,
    ``x.shape``): the tracer hands them to the module as tensors, so the graph returns them as int64
    tensors that follow every new size, and unflatten gives the user the Python value back. Made
    by :mod:`reference.export.traced_numbers` while tracing; never an input."""

    kind: str  # "int" | "size"

    def value(self, tensor: torch.Tensor):
        return int(tensor) if self.kind == "int" else torch.Size(tensor.tolist())


class TracedNumber:
    """A :class:`GraphNumber` as the module returned it under the tracer: its tensor and kind. A
    plain class, not a dataclass: flatten must see one leaf, not a container to open."""

    __slots__ = ("tensor", "spec")

    def __init__(self, tensor: torch.Tensor, spec: GraphNumber):
        self.tensor, self.spec = tensor, spec


@dataclasses.dataclass(frozen=True)
class Schema:
    tree: pytree.TreeSpec
    leaves: tuple[TensorSpec | GraphNumber | Constant, ...]
    requires_grad: tuple[bool, ...] = dataclasses.field(compare=False)

    @property
    def num_tensors(self) -> int:
        return len(self.requires_grad)

    @property
    def holds_python_values(self) -> bool:
        """Whether a leaf is a Python value other than None (a str, a number, a shape)."""
        return any(isinstance(leaf, Constant) and leaf.value is not None for leaf in self.leaves)
