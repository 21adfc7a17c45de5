"""flatten(data) -> (tensors, schema) and unflatten(tensors, schema) -> data."""
from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.utils._pytree as pytree

from reference.nested_io.containers import register_if_container
from reference.nested_io.schema import Constant, GraphNumber, Schema, TensorSpec, TracedNumber


def flatten(data: Any) -> tuple[list[torch.Tensor], Schema]:
    """The tensors of ``data`` in pytree order, and the schema to rebuild ``data`` around them."""
    leaves, tree = pytree.tree_flatten(data, is_leaf=register_if_container)
    tensors = [leaf.tensor if isinstance(leaf, TracedNumber) else leaf for leaf in leaves
               if isinstance(leaf, (torch.Tensor, TracedNumber))]
    specs = tuple(_spec(leaf) for leaf in leaves)
    return tensors, Schema(tree, specs, tuple(t.requires_grad for t in tensors))


def _spec(leaf: Any) -> TensorSpec | GraphNumber | Constant:
    if isinstance(leaf, torch.Tensor):
        return TensorSpec.of(leaf)
    return leaf.spec if isinstance(leaf, TracedNumber) else Constant(leaf)


def unflatten(tensors: Sequence[torch.Tensor], schema: Schema) -> Any:
    """Put ``tensors`` back where ``flatten`` found tensors; constants come from the schema."""
    if len(tensors) != schema.num_tensors:
        raise ValueError(f"schema holds {schema.num_tensors} tensors, got {len(tensors)}")
    remaining = iter(tensors)
    leaves = [spec.value if isinstance(spec, Constant) else
              spec.value(next(remaining)) if isinstance(spec, GraphNumber) else next(remaining)
              for spec in schema.leaves]
    return pytree.tree_unflatten(leaves, schema.tree)
