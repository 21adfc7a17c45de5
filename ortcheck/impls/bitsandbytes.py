"""``bitsandbytes``: eager PyTorch with the 4-bit product computed by bitsandbytes' own
``MatMul4Bit`` autograd Function (what ``bnb.nn.Linear4bit`` reaches through ``matmul_4bit``). A third
implementation of the 4-bit math, for users who train QLoRA without ONNX Runtime. Everything else
is the eager module unchanged, so it only claims the 4-bit properties and convergence."""
from __future__ import annotations

import importlib.util

import torch

from ortcheck.impls.base import Capability, Options
from ortcheck.impls.eager import EagerImpl
from ortcheck.models.linear4bit import BITSANDBYTES_BLOCK_SIZES, use_kernel


class BitsandbytesImpl(EagerImpl):
    name = "bitsandbytes"

    def unavailable_reason(self) -> str | None:
        if importlib.util.find_spec("bitsandbytes") is None:
            return "bitsandbytes is not installed (pip install bitsandbytes==0.50.2)"
        return None

    def capabilities(self) -> frozenset[str]:
        return frozenset({Capability.BNB4, Capability.CONVERGENCE})

    def bnb4_block_sizes(self) -> tuple[int, ...]:
        """What bitsandbytes accepts (its 4-bit layers are what users bring)."""
        return BITSANDBYTES_BLOCK_SIZES

    def wrap(self, module: torch.nn.Module, options: Options = Options()) -> torch.nn.Module:
        return use_kernel(super().wrap(module, options), "bitsandbytes")
