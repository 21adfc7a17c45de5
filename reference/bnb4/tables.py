"""The two 4-bit code books, indexed by code, and the decision thresholds between them.

NF4 (quant_type 1): the 16 quantiles of a normal distribution scaled to [-1, 1], code order =
value order. FP4 (quant_type 0): a sign bit (bit 3) over 3 bits of a small float, so code order is
not value order. A value gets the code of the nearest table entry; a value exactly between two
entries gets the lower one (the comparisons are strict ``x > threshold``, as in bitsandbytes and
onnxruntime). FP4 quantizes |x| against the positive half and adds the sign bit for x < 0.
"""
from __future__ import annotations

import numpy as np
import torch

NF4_VALUES = (-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
              -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
              0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
              0.7229568362236023, 1.0)
_FP4_POSITIVE = (0.0, 0.005208333333, 0.66666667, 1.0, 0.33333333, 0.5, 0.16666667, 0.25)
FP4_VALUES = _FP4_POSITIVE + tuple(-v for v in _FP4_POSITIVE)

# What bitsandbytes and onnxruntime compare against (float32 constants of their decision trees):
# midpoints between neighbouring values, except FP4's 0.583333, written with one digit less.
_FP4_THRESHOLDS = (0.00260417, 0.0859375, 0.20833333, 0.29166667, 0.4166667, 0.583333, 0.8333333)

TABLES = {"fp4": FP4_VALUES, "nf4": NF4_VALUES}


def code_values(quant_type: str) -> torch.Tensor:
    """float32 value of each code (index = code)."""
    return torch.tensor(TABLES[quant_type], dtype=torch.float32)


def _sorted(values) -> tuple[torch.Tensor, torch.Tensor]:
    order = np.argsort(np.asarray(values, dtype=np.float64), kind="stable")
    return torch.tensor(order, dtype=torch.uint8), torch.tensor(np.asarray(values)[order], dtype=torch.float64)


def thresholds(quant_type: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(codes in increasing value order, float32 thresholds between consecutive ones) of the
    table a value is searched in: NF4 whole, FP4 its positive half (|x|)."""
    if quant_type == "nf4":
        codes, values = _sorted(NF4_VALUES)
        return codes, ((values[1:] + values[:-1]) / 2).to(torch.float32)
    codes, _ = _sorted(_FP4_POSITIVE)
    return codes, torch.tensor(_FP4_THRESHOLDS, dtype=torch.float32)
