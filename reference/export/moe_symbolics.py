"""Ops a mixture of experts routes with, which the exporter has no symbolic for.

- ``aten::bincount``: transformers' load-balancing loss (how many tokens each expert got).
- ``aten::histc``: transformers' grouped experts (its default ``experts_implementation``) count the
  tokens per expert with ``histc(expert_ids, bins=num_experts, min=0, max=num_experts - 1)`` (ids as
  float32 on the CPU, int32 on CUDA), chosen over bincount because its output size does not follow
  the values.
- ``aten::_grouped_mm`` (``torch.nn.functional.grouped_mm``): the same grouped experts' products, rows
  sorted by expert and ``offs`` the cumulative count of rows per expert.

The counts are integer paths (no gradient), but a count one off routes a token to the wrong expert,
so each follows torch's binning exactly (``aten/src/ATen/native/cpu/HistogramKernel.cpp``).
"""
from __future__ import annotations

import functools

import torch
from torch.onnx import symbolic_helper

from reference.export.layer_symbolics import _cast_like, _ints, _scalar, _type_utils

_INT64 = torch.onnx.TensorProtoDataType.INT64


def _int64(g, value: int | float):
    return g.op("Constant", value_t=torch.tensor(int(value), dtype=torch.int64))


def _count_each(g, positions, size):
    """``counts[v]`` = how many of the int64 ``positions`` (1-d) equal ``v``, for ``v`` in ``[0, size)``:
    each compared with every ``v``, summed (int64)."""
    values = g.op("Range", _int64(g, 0), size, _int64(g, 1))
    hits = g.op("Equal", g.op("Unsqueeze", positions, _ints(g, 1)), values)
    return g.op("ReduceSum", g.op("Cast", hits, to_i=_INT64), _ints(g, 0), keepdims_i=0)


@symbolic_helper.parse_args("v", "v", "i")
def bincount(g, x, weights, minlength):
    """Sized ``max(minlength, max(x) + 1)`` (the size follows the values, as torch's does). Weighted
    counts (a float result to differentiate) are refused by name."""
    if not symbolic_helper._is_none(weights):
        return symbolic_helper._onnx_unsupported("aten::bincount with weights", weights)
    flat = g.op("Cast", g.op("Reshape", x, _ints(g, -1)), to_i=_INT64)
    largest = g.op("ReduceMax", flat, keepdims_i=1)  # of no entries: int64's least value
    size = g.op("Max", g.op("Add", largest, _ints(g, 1)), _ints(g, minlength))
    return _count_each(g, flat, g.op("Squeeze", size))


def _edges(g, flat, low: float, high: float, like, constant):
    """torch's outer edges: ``[min, max]`` as given; where they are equal, the data's own extremes
    (when there is data); still equal, widened by one each side (``constant(v)``: ``v`` in flat's dtype)."""
    low_edge, high_edge = constant(low), constant(high)
    if low != high:
        return low_edge, high_edge
    has_data = g.op("Greater", g.op("Size", like), _int64(g, 0))
    low_edge = g.op("Where", has_data, g.op("ReduceMin", flat, keepdims_i=0), low_edge)
    high_edge = g.op("Where", has_data, g.op("ReduceMax", flat, keepdims_i=0), high_edge)
    same = g.op("Equal", low_edge, high_edge)
    one = constant(1)
    return (g.op("Where", same, g.op("Sub", low_edge, one), low_edge),
            g.op("Where", same, g.op("Add", high_edge, one), high_edge))


@symbolic_helper.parse_args("v", "i", "f", "f")
def histc(g, x, bins, low, high):
    """``bins`` equal bins over ``[min, max]``: an entry's bin is ``floor((x - min) * bins / (max - min))``
    computed as torch's kernel does, in ``x``'s dtype (floats, the CPU kernel's) or in int64 integer
    arithmetic (integers, which only the CUDA kernel takes: transformers' grouped experts count
    ``int32`` expert ids on CUDA), the entry equal to ``max`` in the last; entries outside (and NaN)
    uncounted. The counts come back in ``x``'s dtype."""
    dtype = _type_utils.JitScalarType.from_value(x).dtype()
    if dtype == torch.bool or dtype.is_complex:
        return symbolic_helper._onnx_unsupported(f"aten::histc of a {dtype} tensor", x)
    if low > high:
        return symbolic_helper._onnx_unsupported("aten::histc with max below min", x)
    flat = g.op("Reshape", x, _ints(g, -1))
    constant = functools.partial(_scalar, g, like=x)
    if not dtype.is_floating_point:  # the CUDA kernel's limits in the input type (truncated), its arithmetic int64
        flat, constant = g.op("Cast", flat, to_i=_INT64), functools.partial(_int64, g)
    low_edge, high_edge = _edges(g, flat, low, high, x, constant)
    inside = g.op("And", g.op("GreaterOrEqual", flat, low_edge), g.op("LessOrEqual", flat, high_edge))
    scaled = g.op("Div", g.op("Mul", g.op("Sub", flat, low_edge), constant(bins)), g.op("Sub", high_edge, low_edge))
    safe = g.op("Where", inside, scaled, constant(0))  # NaN and out-of-range: no cast of them
    positions = g.op("Min", g.op("Cast", safe, to_i=_INT64), _ints(g, bins - 1))
    positions = g.op("Where", inside, positions, _ints(g, -1))  # -1 matches no bin
    counts = _count_each(g, positions, _int64(g, bins))
    return _cast_like(g, counts, x)


def _grouped_rows(g, a, b, offs):
    """``a`` (rows, k) times ``b[e]`` (k, n) for the rows ``offs[e-1]:offs[e]``: each row's expert is how
    many offsets lie at or below it; each row times its expert's matrix (a gather, then a batched
    product). Rows past the last offset, which torch's kernel leaves unwritten, are zero."""
    rows = g.op("Range", _int64(g, 0), g.op("Squeeze", g.op("Shape", a, start_i=0, end_i=1)),
                _int64(g, 1))
    ends = g.op("Unsqueeze", g.op("Cast", offs, to_i=_INT64), _ints(g, 0))
    expert = g.op("ReduceSum", g.op("Cast", g.op("LessOrEqual", ends, g.op("Unsqueeze", rows, _ints(g, 1))),
                                    to_i=_INT64), _ints(g, 1), keepdims_i=0)
    experts = g.op("Shape", b, start_i=0, end_i=1)
    owned = g.op("Less", expert, experts)
    weights = g.op("Gather", b, g.op("Min", expert, g.op("Sub", experts, _ints(g, 1))), axis_i=0)
    products = g.op("Squeeze", g.op("MatMul", g.op("Unsqueeze", a, _ints(g, 1)), weights), _ints(g, 1))
    return g.op("Where", g.op("Unsqueeze", owned, _ints(g, 1)), products, _scalar(g, 0.0, a))


def grouped_mm(g, a, b, offs=None, bias=None, out_dtype=None):
    """The experts' form (2-d rows, 3-d per-expert matrices, ``offs``) and the plain batched one
    (3-d by 3-d, no ``offs``); the other forms (2-d by 2-d groups along ``k``), a bias or another output
    dtype are refused by name."""
    ranks = (symbolic_helper._get_tensor_rank(a), symbolic_helper._get_tensor_rank(b))
    for name, value in (("bias", bias), ("out_dtype", out_dtype)):
        if value is not None and not symbolic_helper._is_none(value):
            return symbolic_helper._onnx_unsupported(f"aten::_grouped_mm with {name}", value)
    has_offs = offs is not None and not symbolic_helper._is_none(offs)
    if ranks == (2, 3) and has_offs:
        return _grouped_rows(g, a, b, offs)
    if ranks == (3, 3) and not has_offs:
        return g.op("MatMul", a, b)
    return symbolic_helper._onnx_unsupported(f"aten::_grouped_mm of ranks {ranks} {'with' if has_offs else 'without'} offs", a)


MOE_SYMBOLICS = {"aten::bincount": (bincount, 18), "aten::histc": (histc, 18), "aten::_grouped_mm": (grouped_mm, 18)}
