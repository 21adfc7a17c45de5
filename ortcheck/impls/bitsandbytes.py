"""``bitsandbytes``: eager PyTorch with the 4-bit product computed by bitsandbytes' own
``MatMul4Bit`` autograd Function (what ``bnb.nn.Linear4bit`` reaches through ``matmul_4bit``). A third
implementation of the 4-bit math, for users who train QLoRA without ONNX Runtime. Everything else
is the eager module unchanged, so it only claims the 4-bit properties and convergence."""
from __future__ import annotations

import importlib.util

import torch

from ortcheck import machine
from ortcheck.impls.base import Capability, Options
from ortcheck.impls.eager import EagerImpl
from ortcheck.models.linear4bit import BITSANDBYTES_BLOCK_SIZES, Linear4Bit, use_kernel


class BitsandbytesImpl(EagerImpl):
    name = "bitsandbytes"
    CAPABILITIES = frozenset({Capability.BNB4, Capability.CONVERGENCE})

    def unavailable_reason(self) -> str | None:
        if importlib.util.find_spec("bitsandbytes") is None:
            return "bitsandbytes is not installed (pip install bitsandbytes==0.50.2)"
        return None

    def bnb4_block_sizes(self) -> tuple[int, ...]:
        """What bitsandbytes accepts (its 4-bit layers are what users bring)."""
        return BITSANDBYTES_BLOCK_SIZES

    def kernels(self, module: torch.nn.Module, device: str) -> str | None:
        """bitsandbytes' CPU ``dequantize_4bit`` runs its AVX512F kernel wherever the CPU has the
        flag (its own CPUID check: ``ATEN_CPU_CAPABILITY`` doesn't reach it), a scalar loop elsewhere;
        the two compute different weights where blocks span rows (the manifest's finding)."""
        if device != "cpu" or not any(isinstance(layer, Linear4Bit) for layer in module.modules()):
            return None
        path = "AVX512F" if "avx512f" in machine.cpu_flags() else "scalar"
        return f"bitsandbytes=={machine.distribution_version('bitsandbytes')} CPU dequantize_4bit: {path}"

    def wrap(self, module: torch.nn.Module, options: Options = Options()) -> torch.nn.Module:
        return use_kernel(super().wrap(module, options), "bitsandbytes")
