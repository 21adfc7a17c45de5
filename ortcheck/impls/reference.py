"""``reference``: our own ORTModule pipeline (``reference/``), on the modern stack."""
from __future__ import annotations

import importlib.util

import torch

import reference.io
from ortcheck.impls.base import Capability, Implementation, Options


def _pipeline_available() -> bool:
    return importlib.util.find_spec("reference.module") is not None


class ReferenceImpl(Implementation):
    name = "reference"

    def unavailable_reason(self) -> str | None:
        if importlib.util.find_spec("onnxruntime.training") is not None:
            return "reference targets the modern stack (onnxruntime without training); run it in the modern env"
        return None

    def capabilities(self) -> frozenset[str]:
        caps = {Capability.IO_ROUNDTRIP, Capability.IO_SCHEMA}
        if _pipeline_available():
            caps |= {Capability.IO_THROUGH_MODULE, Capability.GRAD_PARITY, Capability.CONVERGENCE}
        return frozenset(caps)

    def wrap(self, module: torch.nn.Module, options: Options = Options()) -> torch.nn.Module:
        if not _pipeline_available():
            raise NotImplementedError("the reference pipeline (reference/module) is not built yet")
        from reference.module import ReferenceModule

        return ReferenceModule(module, options)

    def flatten(self, data):
        return reference.io.flatten(data)

    def unflatten(self, tensors, schema):
        return reference.io.unflatten(tensors, schema)

    def observe(self, wrapped):
        return wrapped.observations()
