"""Teach ``torch.utils._pytree`` the containers users pass that it does not know natively.

pytree already handles list, tuple, dict, namedtuple, OrderedDict, defaultdict and deque. Users
also pass dataclasses, ``OrderedDict``/``dict`` subclasses (transformers' ``ModelOutput``),
``UserDict``s (transformers' ``BatchEncoding``, what a tokenizer returns) and list/tuple
subclasses; unregistered, pytree would treat those as opaque leaves and hide the tensors inside. We
register such types the first time flattening meets one. A ``torch.Size`` stays one leaf: newer
pytree flattens it into its ints and rebuilds a plain tuple.
"""
from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from typing import Any

import torch
import torch.utils._pytree as pytree

_lock = threading.Lock()


def register_if_container(node: Any) -> bool:
    """``is_leaf`` hook for ``tree_flatten``: registers unknown container types; only a shape is a leaf."""
    if isinstance(node, torch.Size):
        return True
    node_type = type(node)
    if node_type not in pytree.SUPPORTED_NODES and _needs_registration(node):
        with _lock:
            if node_type not in pytree.SUPPORTED_NODES:
                _register(node_type)
    return False


def _needs_registration(node: Any) -> bool:
    if isinstance(node, torch.Tensor) or _is_namedtuple(node):  # pytree handles namedtuples itself
        return False
    return isinstance(node, (Mapping, list, tuple)) or _is_dataclass_instance(node)


def _is_namedtuple(node: Any) -> bool:
    return isinstance(node, tuple) and hasattr(type(node), "_fields")


def _is_dataclass_instance(node: Any) -> bool:
    return dataclasses.is_dataclass(node) and not isinstance(node, type)


def _register(cls: type) -> None:
    if issubclass(cls, Mapping):
        flatten, unflatten = _mapping_flatten, _mapping_unflatten(cls)
    elif issubclass(cls, (list, tuple)):
        flatten, unflatten = _sequence_flatten, _sequence_unflatten(cls)
    else:
        flatten, unflatten = _dataclass_flatten, _dataclass_unflatten(cls)
    pytree.register_pytree_node(cls, flatten, unflatten, serialized_type_name=f"{cls.__module__}.{cls.__qualname__}")


def _mapping_flatten(node: Mapping) -> tuple[list, list]:
    return list(node.values()), list(node.keys())


def _mapping_unflatten(cls: type):
    def unflatten(values, keys):
        items = dict(zip(keys, values))
        # ModelOutput-style classes are dataclasses whose fields are their keys.
        return cls(**items) if dataclasses.is_dataclass(cls) else cls(items)

    return unflatten


def _sequence_flatten(node) -> tuple[list, None]:
    return list(node), None


def _sequence_unflatten(cls: type):
    return lambda values, _context: cls(values)


def _dataclass_flatten(node) -> tuple[list, tuple[str, ...]]:
    names = tuple(field.name for field in dataclasses.fields(node))
    return [getattr(node, name) for name in names], names


def _dataclass_unflatten(cls: type):
    def unflatten(values, names):
        # Bypass __init__/__post_init__ so the rebuilt object holds exactly what was flattened,
        # frozen dataclasses included.
        node = cls.__new__(cls)
        for name, value in zip(names, values):
            object.__setattr__(node, name, value)
        return node

    return unflatten
