"""``reference``: our own ORTModule pipeline (``reference/``), on the modern stack."""
from __future__ import annotations

import importlib.util

import torch

from ortcheck.impls._reference_io import ReferenceIO
from ortcheck.impls.base import Capability, Implementation, Observations, Options


class ReferenceImpl(ReferenceIO, Implementation):
    name = "reference"

    def unavailable_reason(self) -> str | None:
        if importlib.util.find_spec("onnxruntime") is None:
            return "onnxruntime is not installed"
        if importlib.util.find_spec("onnxruntime.training") is not None:
            return "reference targets the modern stack (onnxruntime without training); run it in the modern env"
        return None

    def capabilities(self) -> frozenset[str]:
        caps = {Capability.IO_ROUNDTRIP, Capability.IO_SCHEMA, Capability.IO_THROUGH_MODULE,
                Capability.GRAD_PARITY, Capability.TRANSITIONS, Capability.CONVERGENCE}
        if torch.cuda.is_available():
            caps.add(Capability.CUDA)
        return frozenset(caps)

    def wrap(self, module: torch.nn.Module, options: Options = Options()) -> torch.nn.Module:
        from reference.module import ReferenceModule

        return ReferenceModule(module, options)

    def observe(self, wrapped) -> Observations:
        return wrapped.observations()
