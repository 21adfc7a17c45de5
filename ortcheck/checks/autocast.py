"""Runs under ``torch.autocast``: every run of a check enters the same autocast state.

The oracle needs nothing else for reduced precision. autocast casts float32 operands of its listed
ops (products, convolutions) to float16 or bfloat16 and promotes others (softmax, losses) to
float32, but leaves float64 alone: the float64 runs stay the truth, while eager's error, measured on
the same computation under the same autocast state, sets the scale in the precision autocast chose;
the dtype of every output and gradient must be eager's (:func:`ortcheck.checks.oracle.judge`).
"""
from __future__ import annotations

import contextlib

import torch

DTYPES = (torch.float16, torch.bfloat16)


def autocast_region(device: str, dtype: torch.dtype | None):
    """``torch.autocast`` on ``device`` in ``dtype``; no region for None."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device, dtype=dtype)
