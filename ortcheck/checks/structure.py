"""An independent walk over nested data, used as the oracle for flatten/unflatten.

It deliberately does not use ``torch.utils._pytree``: the implementations under test do, and an
oracle must not share the code it judges.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

import torch

Path = str


def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def _is_dataclass(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def children(value: Any) -> list[tuple[Any, Any]] | None:
    """(key, child) pairs of a container, in iteration order; None for a leaf."""
    if isinstance(value, torch.Tensor):
        return None
    if isinstance(value, dict):
        return list(value.items())
    if _is_namedtuple(value):
        return list(zip(type(value)._fields, value))
    if isinstance(value, (list, tuple)):
        return list(enumerate(value))
    if _is_dataclass(value):
        return [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    return None


def rebuild(template: Any, new_children: list[Any]) -> Any:
    """A container of ``template``'s type holding ``new_children`` (same keys, same order)."""
    cls = type(template)
    if isinstance(template, dict):
        items = dict(zip(template.keys(), new_children))
        return cls(**items) if dataclasses.is_dataclass(cls) else cls(items)
    if _is_namedtuple(template):
        return cls(*new_children)
    if isinstance(template, (list, tuple)):
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


def same_constant(a: Any, b: Any) -> bool:
    """Exact equality for non-tensor leaves: type too, NaN equal to NaN, 0.0 unequal to -0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a.hex() == b.hex() or (math.isnan(a) and math.isnan(b))
    return a == b


def assert_same_structure(
    actual: Any,
    expected: Any,
    compare_tensors: Callable[[torch.Tensor, torch.Tensor, Path], None] | None = None,
    path: Path = "data",
) -> None:
    """Fail with the path of the first difference in container type, keys, length or constant.

    ``compare_tensors(actual, expected, path)`` judges tensor leaves; by default they must be the
    very same objects.
    """
    if type(actual) is not type(expected):
        raise AssertionError(f"{path}: type {type(actual).__qualname__} != expected {type(expected).__qualname__}")
    if isinstance(expected, torch.Tensor):
        (compare_tensors or _assert_identical)(actual, expected, path)
        return
    expected_pairs, actual_pairs = children(expected), children(actual)
    if expected_pairs is None:
        if not same_constant(actual, expected):
            raise AssertionError(f"{path}: value {actual!r} != expected {expected!r}")
        return
    expected_keys, actual_keys = [k for k, _ in expected_pairs], [k for k, _ in actual_pairs]
    if actual_keys != expected_keys:
        raise AssertionError(f"{path}: keys {actual_keys!r} != expected {expected_keys!r}")
    for (key, a), (_, e) in zip(actual_pairs, expected_pairs):
        assert_same_structure(a, e, compare_tensors, f"{path}[{key!r}]")


def _assert_identical(actual: torch.Tensor, expected: torch.Tensor, path: Path) -> None:
    if actual is not expected:
        raise AssertionError(f"{path}: not the same tensor object (got id {id(actual)}, expected id {id(expected)})")
