"""Ops eager runs on operands of different float dtypes, which their ONNX ops refuse.

Under ``torch.autocast`` a float16 or bfloat16 activation meets float32 parameters: ``LayerNorm``
after a ``Linear`` gets a float16 input and float32 weight and bias. torch's CPU kernel takes the mix
(it computes in float32 and returns the input's dtype); ONNX's ``LayerNormalization`` binds one type
to all three, so onnxruntime refused the graph. We compute as torch does: operands in float32, the
result cast back to the input's dtype.
"""
from __future__ import annotations

import torch
from torch.onnx import symbolic_helper

from reference.export.layer_symbolics import _type_utils

_FLOAT = _type_utils.JitScalarType.FLOAT


def _scalar_type(value):
    return _type_utils.JitScalarType.from_value(value, _type_utils.JitScalarType.UNDEFINED)


def _mixed(*values) -> bool:
    types = {_scalar_type(v) for v in values if v is not None and not symbolic_helper._is_none(v)}
    return len(types - {_type_utils.JitScalarType.UNDEFINED}) > 1


def _as_float(g, value):
    if value is None or symbolic_helper._is_none(value) or _scalar_type(value) == _FLOAT:
        return value
    return g.op("Cast", value, to_i=_FLOAT.onnx_type())


def layer_norm(g, x, normalized_shape, weight, bias, eps, cudnn_enable):
    from torch.onnx import symbolic_opset17

    if not _mixed(x, weight, bias):
        return symbolic_opset17.layer_norm(g, x, normalized_shape, weight, bias, eps, cudnn_enable)
    out = symbolic_opset17.layer_norm(g, _as_float(g, x), normalized_shape, _as_float(g, weight),
                                      _as_float(g, bias), eps, cudnn_enable)
    return g.op("Cast", out, to_i=_scalar_type(x).onnx_type())


MIXED_DTYPE_SYMBOLICS = {"aten::layer_norm": (layer_norm, 17)}
