"""Eager's flatten and schema, on the harness's own walk (:mod:`ortcheck.nested`).

Eager PyTorch never flattens; the I/O properties still get a sanity run on it. Its flatten shares no
code with the reference's (``reference.nested_io``, on pytree), so the eager column of the I/O cells
says something about the properties themselves, not about the reference a second time.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import torch

from ortcheck.nested import children, map_leaves, same_constant


class TensorSlot:
    """Where flatten took a tensor: what a graph would be specialised on (not its sizes). A plain
    class, not a dataclass: the walk must see one leaf, not a container to open."""

    __slots__ = ("spec",)

    def __init__(self, tensor: torch.Tensor):
        self.spec = (tensor.dtype, tensor.dim(), tensor.device.type)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TensorSlot) and self.spec == other.spec

    def __hash__(self) -> int:
        return hash(self.spec)


@dataclasses.dataclass(frozen=True, eq=False)
class EagerSchema:
    """``data`` with each tensor replaced by its :class:`TensorSlot`; equal to another when the
    containers (types, keys, ``default_factory``), the constants (exactly) and the slots are."""

    skeleton: Any
    requires_grad: tuple[bool, ...]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EagerSchema) and _same(self.skeleton, other.skeleton)

    def __hash__(self) -> int:
        return hash(len(self.requires_grad))


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    pairs_a, pairs_b = children(a), children(b)
    if pairs_a is None:
        return a == b if isinstance(a, TensorSlot) else same_constant(a, b)
    if getattr(a, "default_factory", None) is not getattr(b, "default_factory", None):
        return False
    return (len(pairs_a) == len(pairs_b) and all(same_constant(ka, kb) for (ka, _), (kb, _) in zip(pairs_a, pairs_b))
            and all(_same(va, vb) for (_, va), (_, vb) in zip(pairs_a, pairs_b)))


class EagerIO:
    def flatten(self, data: Any) -> tuple[list[torch.Tensor], EagerSchema]:
        tensors: list[torch.Tensor] = []

        def take(leaf: Any) -> Any:
            if not isinstance(leaf, torch.Tensor):
                return leaf
            tensors.append(leaf)
            return TensorSlot(leaf)

        skeleton = map_leaves(data, take)
        return tensors, EagerSchema(skeleton, tuple(t.requires_grad for t in tensors))

    def unflatten(self, tensors: Sequence[torch.Tensor], schema: EagerSchema) -> Any:
        if len(tensors) != len(schema.requires_grad):
            raise ValueError(f"schema holds {len(schema.requires_grad)} tensors, got {len(tensors)}")
        remaining = iter(tensors)
        return map_leaves(schema.skeleton, lambda leaf: next(remaining) if isinstance(leaf, TensorSlot) else leaf)
