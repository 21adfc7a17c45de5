"""Symbolics for reductions torch's TorchScript exporter gets wrong at their edges, found by the deeper
samples of torch's OpInfo database (``suites/test_opinfo.py`` under the ``nightly`` profile). Each
follows eager's (ATen's) formula:

- ``aten::var`` / ``std`` / ``var_mean`` / ``std_mean``: the sum of squared deviations divided by
  ``max(0, N - correction)`` (torch's parses the correction as an int, so 1.3 became 1, and drops
  ``keepdim`` when reducing every dimension);
- ``aten::max`` / ``aten::min`` along a dim: the values gathered at the arg-extremum (torch's takes a
  ReduceMax beside the ArgMax, and a ReduceMax's gradient splits ties evenly where eager's goes to
  the one index it returns);
- ``aten::linalg_vector_norm`` of another order than 0, 1, 2 and ±inf: ``(Σ |x|^p)^(1/p)`` with zero
  elements and a zero norm given eager's zero subgradient (torch's ``Pow`` has an infinite
  derivative at 0, times 0: NaN);
- ``aten::linalg_norm`` without a dim, of a vector or with no ``ord``: the vector norm of every
  element, ``keepdim`` giving eager's shape of ones (torch's drops it, and took ``ord = 0`` for a
  matrix norm);
- ``aten::logsumexp`` of a 0-d tensor: the tensor itself (the log-sum-exp of one element; onnxruntime
  refused the axis).
"""
from __future__ import annotations

import math

import torch
from torch.onnx import symbolic_helper

from reference.export.layer_symbolics import _cast_like, _ints, _scalar
from reference.export.more_layer_symbolics import _rank


def _statistics(g, x, dim, correction, keepdim):
    """(variance, mean) of ``x`` over ``dim`` (None or [] for all)."""
    dims = None if symbolic_helper._is_none(dim) else symbolic_helper._maybe_get_const(dim, "is")
    correction = 1.0 if symbolic_helper._is_none(correction) else float(symbolic_helper._maybe_get_const(correction, "f"))
    keepdim = bool(symbolic_helper._maybe_get_const(keepdim, "i")) if keepdim is not None else False
    axes = [_ints(g, *dims)] if dims else []
    mean = g.op("ReduceMean", x, *axes, keepdims_i=1)
    deviation = g.op("Sub", x, mean)
    squares = g.op("ReduceSum", g.op("Mul", deviation, deviation), *axes, keepdims_i=int(keepdim))
    shape = g.op("Shape", x)
    count = g.op("ReduceProd", g.op("Gather", shape, axes[0], axis_i=0) if axes else shape, keepdims_i=0)
    divisor = g.op("Relu", g.op("Sub", _cast_like(g, count, x), _scalar(g, correction, x)))
    mean = mean if keepdim else g.op("ReduceMean", x, *axes, keepdims_i=0)
    return g.op("Div", squares, divisor), mean


def _statistics_args(args):
    """aten's overloads: (unbiased), (dim, unbiased, keepdim) or (dim, correction, keepdim)."""
    return (None, args[0], None) if len(args) == 1 else args


def var_mean(g, x, *args):
    return _statistics(g, x, *_statistics_args(args))


def std_mean(g, x, *args):
    variance, mean = var_mean(g, x, *args)
    return g.op("Sqrt", variance), mean


def var(g, x, *args):
    return var_mean(g, x, *args)[0]


def std(g, x, *args):
    return std_mean(g, x, *args)[0]


def _extremum(reduce: str, arg: str):
    def symbolic(g, x, dim_or_y=None, keepdim=None):
        if keepdim is None:  # max(x) or max(x, y)
            return getattr(symbolic_helper, f"_{reduce.lower()}_helper")(g, x, dim_or_y, keepdim)
        dim = symbolic_helper._get_const(dim_or_y, "i", "dim")
        keep = symbolic_helper._get_const(keepdim, "i", "keepdim")
        index = g.op(arg, x, axis_i=dim, keepdims_i=1)
        values = g.op("GatherElements", x, index, axis_i=dim)
        if keep:
            return values, index
        return (g.op("Squeeze", values, _ints(g, dim)), g.op("Squeeze", index, _ints(g, dim)))

    return symbolic


def linalg_vector_norm(g, x, ord, dim, keepdim, dtype):
    p = float(symbolic_helper._maybe_get_const(ord, "f"))
    dims = None if symbolic_helper._is_none(dim) else symbolic_helper._maybe_get_const(dim, "is")
    keep = bool(symbolic_helper._maybe_get_const(keepdim, "b"))
    if p in (0.0, 1.0, 2.0, math.inf, -math.inf) or not symbolic_helper._is_none(dtype):
        return symbolic_helper._linalg_vector_norm_helper(g, x, p, dims, keep, dtype)
    absolute = g.op("Abs", x)
    zero = g.op("Equal", absolute, _scalar(g, 0.0, x))  # |0|^p: 0 for p > 0, inf below
    powered = g.op("Where", zero, _scalar(g, 0.0 if p > 0 else math.inf, x),
                   g.op("Pow", g.op("Where", zero, _scalar(g, 1.0, x), absolute), _scalar(g, p, x)))
    total = g.op("ReduceSum", powered, *([_ints(g, *dims)] if dims else []), keepdims_i=int(keep))
    if p < 0:
        return g.op("Pow", total, _scalar(g, 1 / p, x))
    empty = g.op("Equal", total, _scalar(g, 0.0, x))
    return g.op("Where", empty, _scalar(g, 0.0, x),
                g.op("Pow", g.op("Where", empty, _scalar(g, 1.0, x), total), _scalar(g, 1 / p, x)))


def linalg_norm(g, x, ord, dim, keepdim, dtype):
    from torch.onnx import symbolic_opset9

    if not symbolic_helper._is_none(dim) or not (symbolic_helper._is_none(ord) or _rank(x) == 1):
        return symbolic_opset9.linalg_norm(g, x, ord, dim, keepdim, dtype)
    p = 2.0 if symbolic_helper._is_none(ord) else float(symbolic_helper._maybe_get_const(ord, "f"))
    out = linalg_vector_norm(g, x, p, None, False, dtype)
    if symbolic_helper._maybe_get_const(keepdim, "b"):
        ones = g.op("ConstantOfShape", g.op("Shape", g.op("Shape", x)), value_t=torch.tensor([1], dtype=torch.int64))
        out = g.op("Reshape", out, ones)
    return out


def logsumexp(g, x, dim, keepdim):
    if _rank(x) == 0:
        return g.op("Identity", x)
    dims = symbolic_helper._maybe_get_const(dim, "is")
    keep = symbolic_helper._maybe_get_const(keepdim, "i")
    return g.op("ReduceLogSumExp", x, *([_ints(g, *dims)] if dims else []), keepdims_i=int(keep))


REDUCTION_SYMBOLICS = {
    "aten::var": (var, 18), "aten::std": (std, 18), "aten::var_mean": (var_mean, 18), "aten::std_mean": (std_mean, 18),
    "aten::max": (_extremum("Max", "ArgMax"), 18), "aten::min": (_extremum("Min", "ArgMin"), 18),
    "aten::linalg_vector_norm": (linalg_vector_norm, 18), "aten::linalg_norm": (linalg_norm, 18),
    "aten::logsumexp": (logsumexp, 18),
}
