"""ONNX symbolics the TorchScript exporter lacks or gets wrong, registered only while we export.

- ``aten::diff`` has no symbolic; transformers traces it for every causal LM trained with
  ``use_cache=False`` (packed-sequence detection from the position ids).
- ``aten::softplus`` is exported without its ``threshold`` (above it torch's softplus is linear), so
  the graph's values differ from eager's wherever ``beta * x > threshold``.
- ``aten::gelu(approximate="tanh")``: where ``1 + tanh`` cancels (x in [-5, -2]) onnxruntime's
  float32 Gelu kernel is, at rare points, far off eager's float32 (x = -3.288: 9.8e-8 against
  8e-10, 83 times the oracle's bound); we evaluate the formula in float64 and round once.
- ``aten::cumsum`` of a bool or small-integer tensor is exported as a CumSum of that type, which
  ONNX does not define (onnxruntime refuses the graph); torch sums those in int64, so we cast first.
- ``aten::detach``, which the exporter erases: kept as ``reference.StopGradient``
  (:mod:`reference.export.detach`), or gradients would flow through it.
- ``prim::PythonOp``, a custom autograd.Function without a ``symbolic`` of its own: a call back
  into torch (:mod:`reference.export.python_calls`).
- ``aten::copy`` (``tensor.copy_(src)``, what a buffer write in forward usually is; the exporter
  turns it out-of-place and has no symbolic for it): ``src`` cast to the tensor's dtype and
  broadcast to its shape.

torch.nn layers the exporter refuses outright have theirs in :mod:`reference.export.layer_symbolics`
and :mod:`reference.export.more_layer_symbolics`; ops torch's OpInfo samples found exported wrong, in
:mod:`reference.export.op_symbolics`, and at their edges (unusual arguments, 0-d and broadcast operands) in
:mod:`reference.export.edge_symbolics` and :mod:`reference.export.reduction_symbolics`; what a mixture of
experts routes with (``bincount``, ``histc``, ``_grouped_mm``) in :mod:`reference.export.moe_symbolics`; ops
eager runs on mixed float dtypes (autocast's float16 activations with float32 parameters) in
:mod:`reference.export.mixed_dtype_symbolics`; where eager rounds a half-precision result once and torch's
symbolic twice, in :mod:`reference.export.half_rounding`.

Registration is scoped (:func:`registered`): a user's own ``torch.onnx.export`` calls are left alone.
"""
from __future__ import annotations

import contextlib
import math
from typing import Iterator

import torch
from torch.onnx import symbolic_helper, symbolic_opset11

from reference.export.half_rounding import HALF_ROUNDING_SYMBOLICS
from reference.export.mixed_dtype_symbolics import MIXED_DTYPE_SYMBOLICS
from reference.export.moe_symbolics import MOE_SYMBOLICS
from reference.export.detach import detach
from reference.export.edge_symbolics import EDGE_SYMBOLICS
from reference.export.reduction_symbolics import REDUCTION_SYMBOLICS
from reference.export.layer_symbolics import LAYER_SYMBOLICS
from reference.export.more_layer_symbolics import MORE_LAYER_SYMBOLICS
from reference.export.op_symbolics import OP_SYMBOLICS
from reference.export.python_calls import python_op

try:
    from torch.onnx._internal.torchscript_exporter import _type_utils
except ImportError:  # torch < 2.9
    from torch.onnx import _type_utils

_SUMMED_AS_INT64 = {"Bool", "Byte", "Char", "Short", "Int"}
_INT64_MAX = 2**63 - 1


def _constant(g, value, dtype: torch.dtype):
    return g.op("Constant", value_t=torch.tensor(value, dtype=dtype))


def _ints(g, *values: int):
    return _constant(g, values, torch.int64)


@symbolic_helper.parse_args("v", "i", "i", "v", "v")
def diff(g, x, n, dim, prepend, append):
    """``x[1:] - x[:-1]`` along ``dim`` after concatenating ``prepend`` and ``append``, ``n`` times
    (``n = 0``: ``x`` itself, as eager's, which then ignores ``prepend`` and ``append``)."""
    if n == 0:
        return x
    if x.type().scalarType() == "Bool":
        return symbolic_helper._onnx_unsupported("aten::diff of a bool tensor (logical xor)", x)
    parts = [part for part in (prepend, x, append) if not symbolic_helper._is_none(part)]
    out = g.op("Concat", *parts, axis_i=dim) if len(parts) > 1 else x
    for _ in range(n):
        later = g.op("Slice", out, _ints(g, 1), _ints(g, _INT64_MAX), _ints(g, dim))
        earlier = g.op("Slice", out, _ints(g, 0), _ints(g, -1), _ints(g, dim))
        out = g.op("Sub", later, earlier)
    return out


@symbolic_helper.parse_args("v", "f", "f")
def softplus(g, x, beta, threshold):
    """``x`` where ``beta * x > threshold``, else ``log(1 + exp(beta * x)) / beta``, as torch."""
    dtype = _type_utils.JitScalarType.from_value(x, _type_utils.JitScalarType.FLOAT).dtype()
    scaled = x if beta == 1 else g.op("Mul", x, _constant(g, beta, dtype))
    smooth = g.op("Softplus", scaled)
    if beta != 1:
        smooth = g.op("Div", smooth, _constant(g, beta, dtype))
    return g.op("Where", g.op("Greater", scaled, _constant(g, threshold, dtype)), x, smooth)


@symbolic_helper.parse_args("v", "s")
def gelu(g, x, approximate="none"):
    """``0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`` in float64, cast back; the exact form
    stays onnx's Gelu."""
    if approximate != "tanh":
        return g.op("Gelu", x, approximate_s=approximate)
    scalar_type = _type_utils.JitScalarType.from_value(x, _type_utils.JitScalarType.FLOAT)
    double = _type_utils.JitScalarType.DOUBLE
    wide = x if scalar_type == double else g.op("Cast", x, to_i=double.onnx_type())

    def scalar(value):
        return _constant(g, value, torch.float64)

    cubic = g.op("Mul", g.op("Mul", g.op("Mul", wide, wide), wide), scalar(0.044715))
    inner = g.op("Mul", g.op("Add", wide, cubic), scalar(math.sqrt(2 / math.pi)))
    out = g.op("Mul", g.op("Mul", wide, scalar(0.5)), g.op("Add", g.op("Tanh", inner), scalar(1.0)))
    return out if scalar_type == double else g.op("Cast", out, to_i=scalar_type.onnx_type())


def cumsum(g, x, dim, dtype=None):
    """torch's own symbolic, on an int64 copy of a bool or small-integer input (as torch sums them)."""
    if x.type().scalarType() in _SUMMED_AS_INT64:
        x = g.op("Cast", x, to_i=torch.onnx.TensorProtoDataType.INT64)
    return symbolic_opset11.cumsum(g, x, dim, dtype)


def copy(g, x, src, non_blocking=None):
    """``x.copy_(src)`` out of place: ``src`` in ``x``'s dtype, broadcast to ``x``'s shape."""
    x_type = _type_utils.JitScalarType.from_value(x, _type_utils.JitScalarType.UNDEFINED)
    if x_type != _type_utils.JitScalarType.from_value(src, _type_utils.JitScalarType.UNDEFINED):
        src = g.op("Cast", src, to_i=x_type.onnx_type())
    return g.op("Expand", src, g.op("Shape", x))


SYMBOLICS = {"aten::diff": (diff, 11), "aten::softplus": (softplus, 9), "aten::gelu": (gelu, 20),
             "aten::cumsum": (cumsum, 11), "aten::copy": (copy, 9), "aten::detach": (detach, 9),
             "prim::PythonOp": (python_op, 1),
             **LAYER_SYMBOLICS, **MORE_LAYER_SYMBOLICS, **OP_SYMBOLICS, **EDGE_SYMBOLICS,
             **REDUCTION_SYMBOLICS, **MOE_SYMBOLICS, **MIXED_DTYPE_SYMBOLICS,
             **HALF_ROUNDING_SYMBOLICS}  # each with the lowest opset its ops exist in


@contextlib.contextmanager
def registered(opset: int) -> Iterator[None]:
    """:data:`SYMBOLICS` registered at ``opset``, the export's own (torch dispatches to the newest
    registration at or below the target opset, so one below its built-in ``cumsum`` would lose), for
    the duration of one export; those whose ops the opset lacks are left out."""
    chosen = {name: function for name, (function, lowest) in SYMBOLICS.items() if opset >= lowest}
    known = set(_registry()._registry)
    for name, function in chosen.items():
        torch.onnx.register_custom_op_symbolic(name, function, opset)
    try:
        yield
    finally:
        for name in chosen:
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
