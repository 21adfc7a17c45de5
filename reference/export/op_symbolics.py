"""Symbolics for ops torch's TorchScript exporter gets silently wrong, found by torch's own OpInfo
samples (``suites/test_opinfo.py``). Each follows ATen's formula:

- ``aten::log10``: ``log(x) / ln 10`` with a 0-d divisor (torch's divides by a constant of shape
  ``[1]``, which turns a 0-d input into shape ``(1,)``);
- ``aten::nan_to_num``: NaN, +inf and -inf replaced by 0-d values of the input's dtype (torch's
  ``[1]``-shaped replacements: the same shape slip);
- ``aten::avg_pool2d`` / ``avg_pool3d``: ``divisor_override`` kept (torch's drops it, so the graph
  averages over the window where eager sums and divides by the override): the window's sum is the
  average counting padding times the window's size, exact where no window is clipped (without
  ``ceil_mode``; with it, refused by name);
- ``aten::normal``: one draw per element of the tensor operand, in its dtype (torch's draws
  ``RandomNormalLike`` of the *mean*: a number mean gave one value shared by every element, in
  float64), and draws of a given size in the dtype asked (torch's: float64);
- ``aten::addmm`` with ``beta`` other than 0 and 1 as ``beta * x + alpha * (mat1 @ mat2)``:
  onnxruntime's ``Gemm`` returns ``x`` unscaled when the inner dimension is empty;
- float64 where an ONNX attribute or op holds float32 only: ``aten::addmm``'s ``alpha``/``beta``
  (``Gemm``'s float attributes) as float64 constants when float32 does not hold them, ``aten::celu``
  as ``relu(x) + alpha * (exp((x - relu(x)) / alpha) - 1)`` (torch's casts to float32 for ``Celu``);
- gradients where eager has them: ``aten::div`` with ``rounding_mode='trunc'`` as
  ``ceil(q)`` where ``q < 0`` else ``floor(q)`` (torch's casts through int64, which reaches no input, so
  the inputs got no gradient where eager gives zeros, and overflowed past 2**63 and on inf; the chain
  rule through ``q = x / y`` still makes NaN of the zero gradient where ``x`` is infinite or ``y`` is 0) and ``aten::native_layer_norm``'s
  mean and rstd detached (eager's are not differentiable, so they do not require grad), and the
  zero gradients eager's formula gives ``normal``'s operands (torch's graph reparameterised the draw);
- ``aten::cdist`` with ``p = 0`` (the count of differing coordinates): refused by name (torch's
  returns inf), every other ``p`` left to torch's symbolic.
"""
from __future__ import annotations

import math

import torch
from torch.onnx import symbolic_helper

from reference.export.detach import detach
from reference.export.layer_symbolics import _cast_like, _dtype, _scalar, _type_utils


def log10(g, x):
    return g.op("Div", g.op("Log", x), _scalar(g, math.log(10.0), x))


@symbolic_helper.parse_args("v", "f", "f", "f")
def nan_to_num(g, x, nan, posinf, neginf):
    if not symbolic_helper._is_fp(x):
        return x  # integers hold no NaN or inf
    finfo = torch.finfo(_dtype(x))
    out = g.op("Where", g.op("IsNaN", x), _scalar(g, 0.0 if nan is None else nan, x), x)
    out = g.op("Where", g.op("IsInf", out, detect_negative_i=0), _scalar(g, finfo.max if posinf is None else posinf, x), out)
    return g.op("Where", g.op("IsInf", out, detect_positive_i=0), _scalar(g, finfo.min if neginf is None else neginf, x), out)


def _avg_pool(dims: int):
    @symbolic_helper.parse_args("v", "is", "is", "is", "i", "i", "v")
    def avg_pool(g, x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
        kernel = list(kernel) * dims if len(kernel) == 1 else list(kernel)
        stride = kernel if not stride else list(stride) * dims if len(stride) == 1 else list(stride)
        padding = list(padding) * dims if len(padding) == 1 else list(padding)
        divisor = None if symbolic_helper._is_none(divisor_override) else symbolic_helper._get_const(
            divisor_override, "i", "divisor_override")
        if divisor is not None and ceil_mode:
            return symbolic_helper._onnx_unsupported(f"avg_pool{dims}d with divisor_override and ceil_mode", x)
        pooled = g.op("AveragePool", x, ceil_mode_i=ceil_mode, count_include_pad_i=int(bool(count_include_pad) or divisor is not None),
                      kernel_shape_i=kernel, pads_i=padding * 2, strides_i=stride)
        return pooled if divisor is None else g.op("Mul", pooled, _scalar(g, math.prod(kernel) / divisor, x))

    return avg_pool


def cdist(g, x1, x2, p=2.0, compute_mode=None):
    if symbolic_helper._parse_arg(p, "f") == 0.0:
        return symbolic_helper._onnx_unsupported("aten::cdist with p=0 (a count of differing coordinates)", x1)
    from torch.onnx import symbolic_opset9  # torch's own for every other p

    return symbolic_opset9.cdist(g, x1, x2, p, compute_mode)


def normal(g, mean, std, *rest):
    """``mean + std * N(0, 1)`` drawn like the broadcast of both, in the tensor operand's dtype
    (both tensors: their promoted dtype), with eager's zero gradient for the operands (its derivative
    formula: the draw is not reparameterised)."""
    from torch.onnx import symbolic_opset11

    if len(rest) > 1:  # normal(float, float, size, dtype=...): torch's draws the size, in float64 whatever dtype says
        dtype = symbolic_helper._maybe_get_const(rest[2], "i")
        dtype = torch.get_default_dtype() if symbolic_helper._is_none(rest[2]) else _type_utils.JitScalarType(dtype).dtype()
        return g.op("Cast", symbolic_opset11.normal(g, mean, std, *rest),
                    to_i=_type_utils.JitScalarType.from_dtype(dtype).onnx_type())
    tensors = [v for v in (mean, std) if v.type().kind() == "TensorType" and not symbolic_helper._is_constant(v)]
    like = tensors[0] if len(tensors) == 1 else g.op("Add", mean, std)
    mean, std = (v if v in tensors else _cast_like(g, v, like) for v in (mean, std))
    if len(tensors) == 1:
        like = g.op("Add", mean, std)  # the broadcast shape of both
    drawn = g.op("Add", g.op("Mul", g.op("RandomNormalLike", like), std), mean)
    return with_zero_gradient(g, detach(g, drawn), *tensors)


def with_zero_gradient(g, value, *sources):
    """``value`` plus ``t - t`` (+0) for ``t`` the signs of each source (NaN as 0: finite): where
    eager's derivative formula gives an operand zeros (a draw), its gradient is zeros, not none."""
    for source in sources:
        signs = g.op("Sign", g.op("Where", g.op("IsNaN", source), _scalar(g, 0.0, source), source))
        value = g.op("Add", value, g.op("Sub", signs, signs))
    return value


def _is_double(x) -> bool:
    return _dtype(x) == torch.float64


def _float32_holds(value: float) -> bool:
    return float(torch.tensor(value, dtype=torch.float32)) == value


def addmm(g, x, mat1, mat2, beta, alpha):
    from torch.onnx import symbolic_opset9

    scales = [symbolic_helper._maybe_get_const(v, "f") for v in (beta, alpha)]
    explicit = all(isinstance(v, float) for v in scales) and scales[0] != 0 and (
        scales[0] != 1  # onnxruntime's Gemm drops beta where mat1 @ mat2 sums nothing (an empty inner dim)
        or _is_double(mat1) and not all(map(_float32_holds, scales)))
    if not explicit:
        return symbolic_opset9.addmm(g, x, mat1, mat2, beta, alpha)
    terms = ((x, scales[0]), (g.op("MatMul", mat1, mat2), scales[1]))  # beta * x + alpha * (mat1 @ mat2)
    return g.op("Add", *(g.op("Mul", value, _scalar(g, scale, mat1)) if scale != 1 else value for value, scale in terms))


def celu(g, x, alpha):
    from torch.onnx import symbolic_opset12

    if not _is_double(x):
        return symbolic_opset12.celu(g, x, alpha)
    alpha = _scalar(g, symbolic_helper._maybe_get_const(alpha, "f"), x)
    positive = g.op("Relu", x)  # then x - relu(x) is min(x, 0), with eager's derivative 1 at 0 (Min's splits a tie)
    negative = g.op("Sub", g.op("Exp", g.op("Div", g.op("Sub", x, positive), alpha)), _scalar(g, 1.0, x))
    return g.op("Add", positive, g.op("Mul", alpha, negative))


def div(g, x, y, *rounding):
    from torch.onnx import symbolic_opset9

    if rounding and symbolic_helper._maybe_get_const(rounding[0], "s") == "trunc" and symbolic_helper._is_fp(x):
        quotient = symbolic_opset9.true_divide(g, x, y)
        negative = g.op("Less", quotient, _scalar(g, 0.0, quotient))
        return g.op("Where", negative, g.op("Ceil", quotient), g.op("Floor", quotient))
    return symbolic_opset9.div(g, x, y, *rounding)


def native_layer_norm(g, x, normalized_shape, weight, bias, eps):
    from torch.onnx import symbolic_opset9

    out, mean, rstd = symbolic_opset9.native_layer_norm(g, x, normalized_shape, weight, bias, eps)
    return out, detach(g, mean), detach(g, rstd)


OP_SYMBOLICS = {"aten::log10": (log10, 9), "aten::nan_to_num": (nan_to_num, 10),
                "aten::avg_pool2d": (_avg_pool(2), 11), "aten::avg_pool3d": (_avg_pool(3), 11), "aten::cdist": (cdist, 9),
                "aten::normal": (normal, 11), "aten::addmm": (addmm, 9), "aten::celu": (celu, 12),
                "aten::div": (div, 9), "aten::native_layer_norm": (native_layer_norm, 9)}
