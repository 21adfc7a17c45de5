"""Tensor closeness per dtype: ``torch.testing.assert_close`` defaults, plus dtype/shape checks."""
from __future__ import annotations

import torch


def assert_tensors_close(actual: torch.Tensor, expected: torch.Tensor, path: str = "tensor") -> None:
    """Same dtype, shape and device type; values within assert_close's per-dtype tolerances."""
    try:
        torch.testing.assert_close(actual, expected, check_device=False, equal_nan=True)
    except AssertionError as error:
        raise AssertionError(f"{path}: {error}") from None
