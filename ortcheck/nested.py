"""An independent walk over nested data: children, rebuilding, mapping, sites.

The harness's own, deliberately not ``torch.utils._pytree``: the implementations under test flatten
with pytree, and an oracle must not share the code it judges. Both the oracles
(:mod:`ortcheck.checks`) and the strategies that mutate structures (:mod:`ortcheck.strategies`)
build on it, so it sits below both.
"""
from __future__ import annotations

import collections
import dataclasses
import math
from collections.abc import Mapping
from typing import Any, Callable

import torch

Site = tuple  # path of child indices from the root


def is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def is_dataclass_instance(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def children(value: Any) -> list[tuple[Any, Any]] | None:
    """(key, child) pairs of a container, in iteration order; None for a leaf."""
    if isinstance(value, (torch.Tensor, torch.Size)):  # a shape is one value, as to pytree
        return None
    if isinstance(value, Mapping):  # dict, its subclasses, and UserDict (transformers' BatchEncoding)
        return list(value.items())
    if is_namedtuple(value):
        return list(zip(type(value)._fields, value))
    if isinstance(value, (list, tuple, collections.deque)):
        return list(enumerate(value))
    if is_dataclass_instance(value):
        return [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    return None


def rebuild(template: Any, new_children: list[Any]) -> Any:
    """A container of ``template``'s type holding ``new_children`` (same keys, same order)."""
    cls = type(template)
    if isinstance(template, Mapping):
        items = dict(zip(template.keys(), new_children))
        if isinstance(template, collections.defaultdict):
            return cls(template.default_factory, items)
        return cls(**items) if dataclasses.is_dataclass(cls) else cls(items)
    if is_namedtuple(template):
        return cls(*new_children)
    if isinstance(template, (list, tuple, collections.deque)):
        return cls(new_children)
    return dataclasses.replace(template, **{f.name: c for f, c in zip(dataclasses.fields(template), new_children)})


def map_leaves(value: Any, fn: Callable[[Any], Any]) -> Any:
    """``value`` with every leaf replaced by ``fn(leaf)``; containers keep their types."""
    pairs = children(value)
    if pairs is None:
        return fn(value)
    return rebuild(value, [map_leaves(child, fn) for _, child in pairs])


def leaves(value: Any) -> list[Any]:
    pairs = children(value)
    if pairs is None:
        return [value]
    return [leaf for _, child in pairs for leaf in leaves(child)]


def sites(value: Any, accept: Callable[[Any], bool], path: Site = ()) -> list[Site]:
    """Paths of all nodes (containers and leaves) for which ``accept`` holds, pre-order."""
    found = [path] if accept(value) else []
    for index, (_, child) in enumerate(children(value) or []):
        found += sites(child, accept, path + (index,))
    return found


def replace_at(value: Any, site: Site, fn: Callable[[Any], Any]) -> Any:
    """``value`` with the node at ``site`` replaced by ``fn(node)``."""
    if not site:
        return fn(value)
    pairs = children(value)
    new_children = [replace_at(child, site[1:], fn) if i == site[0] else child for i, (_, child) in enumerate(pairs)]
    return rebuild(value, new_children)


def same_constant(a: Any, b: Any) -> bool:
    """Exact equality for non-tensor leaves: type too, NaN equal to NaN, 0.0 unequal to -0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a.hex() == b.hex() or (math.isnan(a) and math.isnan(b))
    return a == b
