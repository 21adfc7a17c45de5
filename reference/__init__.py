"""The reference ORTModule-style pipeline: stages in pipeline order, see docs/architecture.md.

Standalone: ``from reference import ReferenceModule, Options`` needs torch, onnx and onnxruntime,
never the ortcheck harness. Names are resolved lazily so ``reference.nested_io`` alone (which
eager's I/O sanity runs use, also beside the legacy onnxruntime-training) imports no onnxruntime.
"""
from __future__ import annotations

import importlib

_EXPORTS = {"ReferenceModule": "reference.module", "Options": "reference.options", "Counters": "reference.options"}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'reference' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
