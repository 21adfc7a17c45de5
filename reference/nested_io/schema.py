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
class Schema:
    tree: pytree.TreeSpec
    leaves: tuple[TensorSpec | Constant, ...]
    requires_grad: tuple[bool, ...] = dataclasses.field(compare=False)

    @property
    def num_tensors(self) -> int:
        return len(self.requires_grad)
