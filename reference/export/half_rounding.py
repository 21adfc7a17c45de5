"""Ops whose float16/bfloat16 result eager rounds once where the exported graph would round twice.

In half precision every op's result is rounded to the half type (on the CPU the kernel forms do it
after each node, on CUDA the kernels themselves), so the graph must split an op where eager's kernel
splits it, no further. ``aten::linear`` with a bias on an input of rank 3 or more: ATen flattens the
input to a matrix and calls ``addmm``, one product-plus-bias kernel with one rounding; torch's
symbolic emits ``MatMul`` then ``Add``, a rounding of the product in between (a bfloat16 query
projection came out one unit of its last place off in most elements, and the stack's loss 52x the
oracle's scale). Here it is flattened and one ``Gemm``, as ATen's. float32 and float64 graphs keep
torch's form.
"""
from __future__ import annotations

import torch
from torch.onnx import symbolic_helper, symbolic_opset9

from reference.export.layer_symbolics import _ints, _type_utils

_HALVES = (_type_utils.JitScalarType.HALF, _type_utils.JitScalarType.BFLOAT16)


def linear(g, x, weight, bias):
    rank = symbolic_helper._get_tensor_rank(x)
    dtype = _type_utils.JitScalarType.from_value(x, _type_utils.JitScalarType.UNDEFINED)
    if rank is None or rank < 3 or dtype not in _HALVES or symbolic_helper._is_none(bias):
        return symbolic_opset9.linear(g, x, weight, bias)
    rows = g.op("Flatten", x, axis_i=rank - 1)
    rows.setType(x.type().with_sizes([None, None]))
    out = symbolic_opset9.linear(g, rows, weight, bias)  # rank 2: one Gemm, as addmm
    leading = g.op("Slice", g.op("Shape", x), _ints(g, 0), _ints(g, rank - 1))
    return g.op("Reshape", out, g.op("Concat", leading, _ints(g, -1), axis_i=0))


HALF_ROUNDING_SYMBOLICS = {"aten::linear": (linear, 13)}
