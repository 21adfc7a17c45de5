"""``eager``: the module itself. The oracle, and a sanity run of every property."""
from __future__ import annotations

import torch

import reference.io
from ortcheck.impls.base import Capability, Implementation, Options


class EagerImpl(Implementation):
    name = "eager"

    def capabilities(self) -> frozenset[str]:
        caps = {Capability.IO_ROUNDTRIP, Capability.IO_SCHEMA, Capability.IO_THROUGH_MODULE,
                Capability.GRAD_PARITY, Capability.TRANSITIONS, Capability.MEM_EFFICIENT_GRAD,
                Capability.CONVERGENCE}
        if torch.cuda.is_available():
            caps.add(Capability.CUDA)
        return frozenset(caps)

    def wrap(self, module: torch.nn.Module, options: Options = Options()) -> torch.nn.Module:
        return module.to(options.device)

    # Eager PyTorch never flattens; the harness's canonical flattening stands in for it.
    def flatten(self, data):
        return reference.io.flatten(data)

    def unflatten(self, tensors, schema):
        return reference.io.unflatten(tensors, schema)
