"""The epsilon torch used, from the float32 ONNX stores.

ONNX's normalization ops keep ``epsilon`` as a float32 attribute: torch's ``eps=1e-5`` arrives as
9.99999974738e-06, while eager adds the double 1e-5. Where the epsilon dominates (a LayerNorm over two
features: dx ∝ eps / (var + eps)), that 2.5e-8 relative difference is the whole of a float64
gradient's error (3e-13 on an H100, ~40x the float64 oracle's bound). Every epsilon a user writes
with up to 7 significant digits is the shortest decimal of its float32, so that decimal is the
double torch used."""
from __future__ import annotations

import numpy as np


def written_epsilon(attribute: float) -> float:
    """The double a user wrote for an epsilon stored as ``attribute`` (a float32 value)."""
    return float(str(np.float32(attribute)))
