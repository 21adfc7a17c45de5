"""Blockwise quantize / dequantize and the byte layout, vectorized.

Layout (bitsandbytes', which ``MatMulBnb4`` reads): the ``[N, K]`` weight is flattened row-major
and cut into blocks of ``block_size`` elements (a block may span rows; the last may be partial).
Each block is scaled by the reciprocal of its absmax (0 for an all-zero block) and each value gets
a 4-bit code; byte j holds code 2j in its high nibble and code 2j+1 in its low one (an odd count
pads with the code of 0). Arithmetic is float32 as in the kernels: ``x * (1 / absmax)``, then
``table[code] * absmax``.
"""
from __future__ import annotations

import dataclasses

import torch

from reference.bnb4.tables import code_values, thresholds

FP4, NF4 = 0, 1
QUANT_TYPES = {FP4: "fp4", NF4: "nf4"}


@dataclasses.dataclass(frozen=True)
class Packed:
    data: torch.Tensor     # uint8 [(N*K + 1) // 2]
    absmax: torch.Tensor   # float32 [ceil(N*K / block_size)]
    shape: tuple[int, int]  # (N, K)
    block_size: int
    quant_type: int        # 0 FP4, 1 NF4


def _check(block_size: int, quant_type: int) -> str:
    if quant_type not in QUANT_TYPES:
        raise ValueError(f"unknown quant_type {quant_type!r}; valid: 0 (FP4), 1 (NF4)")
    if block_size < 2 or block_size % 2:
        raise ValueError(f"block_size must be an even number >= 2, got {block_size!r}")
    return QUANT_TYPES[quant_type]


def codes_of(normalized: torch.Tensor, quant_type: int) -> torch.Tensor:
    """4-bit codes (uint8) of float32 values in [-1, 1]: nearest table entry, ties to the lower one."""
    name = QUANT_TYPES[quant_type]
    codes, bounds = (table.to(normalized.device) for table in thresholds(name))
    if name == "nf4":
        return codes[torch.searchsorted(bounds, normalized, right=False)]
    sign = (normalized < 0).to(torch.uint8) << 3
    return codes[torch.searchsorted(bounds, normalized.abs(), right=False)] | sign


def quantize(weight: torch.Tensor, block_size: int, quant_type: int) -> Packed:
    """Pack a 2-D float weight ``[N, K]``."""
    _check(block_size, quant_type)
    if weight.dim() != 2:
        raise ValueError(f"expected a 2-D [N, K] weight, got shape {list(weight.shape)}")
    flat = weight.detach().to(torch.float32).reshape(-1)
    numel = flat.numel()
    blocks = -(-numel // block_size)
    padded = torch.nn.functional.pad(flat, (0, blocks * block_size - numel)).view(blocks, block_size)
    absmax = padded.abs().amax(dim=1) if numel else torch.zeros(0, device=flat.device)
    reciprocal = torch.where(absmax != 0, 1.0 / absmax, torch.zeros_like(absmax))
    codes = codes_of((padded * reciprocal[:, None]).reshape(-1)[:numel], quant_type)
    if numel % 2:
        codes = torch.cat([codes, codes_of(torch.zeros(1, device=flat.device), quant_type)])
    pairs = codes.view(-1, 2)
    return Packed((pairs[:, 0] << 4) | pairs[:, 1], absmax, tuple(weight.shape), block_size, quant_type)


def unpack_codes(data: torch.Tensor, numel: int) -> torch.Tensor:
    return torch.stack([data >> 4, data & 0xF], dim=1).reshape(-1)[:numel]


def dequantize(packed: Packed) -> torch.Tensor:
    """The float32 ``[N, K]`` weight ``packed`` stands for."""
    _check(packed.block_size, packed.quant_type)
    n, k = packed.shape
    numel = n * k
    table = code_values(QUANT_TYPES[packed.quant_type]).to(packed.data.device)
    values = table[unpack_codes(packed.data, numel).long()]
    scale = packed.absmax.repeat_interleave(packed.block_size)[:numel]
    return (values * scale).view(n, k)
