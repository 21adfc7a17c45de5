"""ONNX symbolics the TorchScript exporter lacks or gets wrong, registered only while we export.

- ``aten::diff`` has no symbolic; transformers traces it for every causal LM trained with
  ``use_cache=False`` (packed-sequence detection from the position ids).
- ``aten::cumsum`` of a bool or small-integer tensor is exported as a CumSum of that type, which
  ONNX does not define (onnxruntime refuses the graph); torch sums those in int64, so we cast first.

Registration is scoped (:func:`registered`): a user's own ``torch.onnx.export`` calls are left alone.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import torch
from torch.onnx import symbolic_helper, symbolic_opset11

_SUMMED_AS_INT64 = {"Bool", "Byte", "Char", "Short", "Int"}
_INT64_MAX = 2**63 - 1


def _ints(g, *values: int):
    return g.op("Constant", value_t=torch.tensor(values, dtype=torch.int64))


@symbolic_helper.parse_args("v", "i", "i", "v", "v")
def diff(g, x, n, dim, prepend, append):
    """``x[1:] - x[:-1]`` along ``dim`` after concatenating ``prepend`` and ``append``, ``n`` times."""
    if x.type().scalarType() == "Bool":
        return symbolic_helper._onnx_unsupported("aten::diff of a bool tensor (logical xor)", x)
    parts = [part for part in (prepend, x, append) if not symbolic_helper._is_none(part)]
    out = g.op("Concat", *parts, axis_i=dim) if len(parts) > 1 else x
    for _ in range(n):
        later = g.op("Slice", out, _ints(g, 1), _ints(g, _INT64_MAX), _ints(g, dim))
        earlier = g.op("Slice", out, _ints(g, 0), _ints(g, -1), _ints(g, dim))
        out = g.op("Sub", later, earlier)
    return out


def cumsum(g, x, dim, dtype=None):
    """torch's own symbolic, on an int64 copy of a bool or small-integer input (as torch sums them)."""
    if x.type().scalarType() in _SUMMED_AS_INT64:
        x = g.op("Cast", x, to_i=torch.onnx.TensorProtoDataType.INT64)
    return symbolic_opset11.cumsum(g, x, dim, dtype)


SYMBOLICS = {"aten::diff": diff, "aten::cumsum": cumsum}


@contextlib.contextmanager
def registered(opset: int) -> Iterator[None]:
    """:data:`SYMBOLICS` registered at ``opset``, the export's own (torch dispatches to the newest
    registration at or below the target opset, so one below its built-in ``cumsum`` would lose), for
    the duration of one export. Both need opset 11 (CumSum, Slice with inputs)."""
    if opset < 11:
        yield
        return
    known = set(_registry()._registry)
    for name, function in SYMBOLICS.items():
        torch.onnx.register_custom_op_symbolic(name, function, opset)
    try:
        yield
    finally:
        for name in SYMBOLICS:
            torch.onnx.unregister_custom_op_symbolic(name, opset)
            if name not in known:  # unregistering leaves an empty group, which fails lookups with
                _registry()._registry.pop(name, None)  # "min() arg is an empty sequence", not "unsupported"


def _registry():
    """torch's symbolic registry (private; its module moved between torch versions)."""
    try:
        from torch.onnx._internal.torchscript_exporter import registration
    except ImportError:  # torch < 2.9
        from torch.onnx._internal import registration
    return registration.registry
