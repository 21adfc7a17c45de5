"""Bitwise equality: what a transformation that must change no number (recompute) is held to.

Floats are compared by their bits, so a signed zero or a NaN payload counts; the message says how
many elements differ and by how many units in the last place at worst.
"""
from __future__ import annotations

from typing import Any

import torch

from ortcheck.nested import children

_INT_VIEW = {torch.float32: torch.int32, torch.float64: torch.int64, torch.float16: torch.int16,
             torch.bfloat16: torch.int16}


def ulp_distance(a: torch.Tensor, b: torch.Tensor) -> int:
    """Largest distance between same-shape float tensors in units in the last place (sign-aware)."""
    view = _INT_VIEW[a.dtype]
    bits = [t.detach().contiguous().view(view).to(torch.int64) for t in (a, b)]
    ordered = [torch.where(x < 0, torch.iinfo(view).min - x, x) for x in bits]  # monotone in the float's value
    return int((ordered[0] - ordered[1]).abs().max()) if a.numel() else 0


def assert_bitwise_equal(actual: Any, expected: Any, path: str = "output") -> None:
    """Nested ``actual`` equals ``expected`` bit for bit: same structure, dtypes, shapes and bits."""
    expected_children, actual_children = children(expected), children(actual)
    if expected_children is None or actual_children is None:
        _assert_leaf(actual, expected, path)
        return
    expected_keys = [key for key, _ in expected_children]
    actual_keys = [key for key, _ in actual_children]
    assert actual_keys == expected_keys, f"{path}: keys {actual_keys} != {expected_keys}"
    for (key, a), (_, e) in zip(actual_children, expected_children):
        assert_bitwise_equal(a, e, f"{path}[{key!r}]")


def _assert_leaf(actual: Any, expected: Any, path: str) -> None:
    if not isinstance(expected, torch.Tensor):
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"
        return
    assert isinstance(actual, torch.Tensor), f"{path}: {type(actual).__name__} where a tensor was expected"
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (
        f"{path}: {actual.dtype}{list(actual.shape)} != {expected.dtype}{list(expected.shape)}")
    a, e = actual.detach().cpu(), expected.detach().cpu()
    if a.dtype in _INT_VIEW:
        view = _INT_VIEW[a.dtype]
        differ = a.contiguous().view(view) != e.contiguous().view(view)
        if differ.any():
            raise AssertionError(f"{path}: {int(differ.sum())} of {a.numel()} elements differ in their bits, "
                                 f"at most {ulp_distance(a, e)} ulp apart (max abs diff "
                                 f"{(a.double() - e.double()).abs().nan_to_num(float('inf')).max().item():.3g})")
    elif not torch.equal(a, e):
        raise AssertionError(f"{path}: {int((a != e).sum())} of {a.numel()} elements differ")
