"""4-bit (bitsandbytes NF4/FP4) weights: shapes, block sizes and the values that stress a quantizer.

Sizes include odd ones and ones no block size divides (a partial last block, blocks spanning
rows); block sizes cover what onnxruntime's CPU kernel accepts (16-256) and bitsandbytes does
(32-4096); values include zeros, all-zero and constant blocks, and outliers that dominate a
block's absmax. Simplest first: NF4, block 16, a 1 x 1 weight of a plain normal value.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import torch
from hypothesis import strategies as st

from ortcheck.models.linear4bit import BITSANDBYTES_BLOCK_SIZES, ORT_CPU_BLOCK_SIZES

QUANT_TYPES = {"nf4": 1, "fp4": 0}
BNB_BLOCK_SIZES = BITSANDBYTES_BLOCK_SIZES
BLOCK_SIZES = tuple(sorted(set(ORT_CPU_BLOCK_SIZES) | set(BNB_BLOCK_SIZES)))
VALUE_KINDS = ("normal", "zeros", "constant_blocks", "outliers", "tiny", "huge")


@dataclasses.dataclass(frozen=True)
class Weight4Bit:
    """A float32 ``[n, k]`` weight to quantize with ``block_size`` and ``quant_type`` (repr rebuilds it)."""

    n: int
    k: int
    block_size: int
    quant_type: str
    kind: str = "normal"
    seed: int = 0

    def tensor(self) -> torch.Tensor:
        rng = np.random.default_rng(self.seed)
        w = rng.standard_normal((self.n, self.k))
        flat = w.reshape(-1)
        if self.kind == "zeros":
            flat[rng.random(flat.size) < 0.5] = 0.0
        elif self.kind == "constant_blocks":
            for start in range(0, flat.size, self.block_size):
                flat[start:start + self.block_size] = flat[start] if rng.random() < 0.7 else 0.0
        elif self.kind == "outliers":
            flat[rng.integers(0, flat.size, max(1, flat.size // 50))] *= 1000.0
        elif self.kind == "tiny":
            w *= 1e-30
        elif self.kind == "huge":
            w *= 1e30
        return torch.from_numpy(w.astype(np.float32))

    @property
    def quant_type_id(self) -> int:
        return QUANT_TYPES[self.quant_type]


def weights_4bit(block_sizes=BLOCK_SIZES, max_dim: int = 48, kinds=VALUE_KINDS) -> st.SearchStrategy[Weight4Bit]:
    return st.builds(Weight4Bit, st.integers(1, max_dim), st.integers(1, max_dim), st.sampled_from(block_sizes),
                     st.sampled_from(list(QUANT_TYPES)), st.sampled_from(kinds), st.integers(0, 2**16))
