"""Structure equality: the oracle for flatten/unflatten, on the harness's own walk (:mod:`ortcheck.nested`)."""
from __future__ import annotations

from typing import Any, Callable

import torch

from ortcheck.nested import children, same_constant

Path = str


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
    if getattr(actual, "default_factory", None) is not getattr(expected, "default_factory", None):
        raise AssertionError(f"{path}: default_factory {actual.default_factory!r} != expected {expected.default_factory!r}")
    expected_keys, actual_keys = [k for k, _ in expected_pairs], [k for k, _ in actual_pairs]
    if actual_keys != expected_keys:
        raise AssertionError(f"{path}: keys {actual_keys!r} != expected {expected_keys!r}")
    for (key, a), (_, e) in zip(actual_pairs, expected_pairs):
        assert_same_structure(a, e, compare_tensors, f"{path}[{key!r}]")


def _assert_identical(actual: torch.Tensor, expected: torch.Tensor, path: Path) -> None:
    if actual is not expected:
        raise AssertionError(f"{path}: not the same tensor object (got id {id(actual)}, expected id {id(expected)})")
