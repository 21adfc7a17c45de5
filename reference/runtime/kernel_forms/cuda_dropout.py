"""A recomputed Dropout in the arithmetic of onnxruntime's CUDA Dropout kernel.

The memory optimizer recomputes a Dropout from its stashed mask as ``x / (1 - ratio) * mask``
(``reference.recompute.rewrite``), bit for bit the CPU kernel. The CUDA kernel (1.31,
``dropout_impl.cu``) computes ``T(float(x) * mask * scale)`` with ``scale = 1.0f / (1.0f - ratio)``
in float32 whatever T is, so on an H100 a recomputed dropout moved a loss by 1 ulp and the
gradients by up to 19 (``suites/test_recompute.py``, dropout 0.1). On CUDA the clone computes so::

    Cast(Mul(Mul(Cast(x, float), Cast(mask, float)), scale), T)      # Casts only where T is double

float16 and bfloat16 are left alone: the clone's keep constant is rounded to T, and the kernel's
scale comes from the unrounded ratio (mixed precision's own work).
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from reference.recompute.rewrite import DROPOUT_MASK, DROPOUT_SCALE
from reference.runtime.kernel_forms.nodes import rewrite_nodes


def _constants(graph: onnx.GraphProto) -> dict[str, np.ndarray]:
    found = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            found[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return found


def recomputed_dropout_as_cuda(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` whose recomputed Dropouts compute as the CUDA kernel; ``model`` where it has none."""
    scales = {n.output[0]: n for n in model.graph.node if n.op_type == "Div" and n.name.endswith(DROPOUT_SCALE)}
    masks = {n.name: n for n in model.graph.node
             if n.op_type == "Mul" and n.name.endswith(DROPOUT_MASK) and n.input[0] in scales}
    if not masks:
        return model
    constants = _constants(model.graph)

    def rewrite(graph: onnx.GraphProto, node: onnx.NodeProto) -> list[onnx.NodeProto] | None:
        if node.op_type == "Div" and node.output[0] in scales and node.name.endswith(DROPOUT_SCALE):
            return []  # read by its masking node alone, which reads x itself now
        if node.name not in masks:
            return None
        division = scales[node.input[0]]
        (x, keep), (mask_as_t,), out = division.input, node.input[1:], node.output[0]
        keep_value = constants.get(keep)
        dtype = helper.np_dtype_to_tensor_dtype(keep_value.dtype) if keep_value is not None else None
        if dtype not in (TensorProto.FLOAT, TensorProto.DOUBLE):
            return [division, node]  # the division was dropped where it stood: it comes back here
        scale = f"{out}__cuda_scale"
        graph.initializer.append(numpy_helper.from_array(np.float32(1.0) / np.float32(keep_value), scale))
        v = lambda suffix: f"{out}__cuda_{suffix}"  # noqa: E731
        nodes, mask = [], mask_as_t
        if dtype != TensorProto.FLOAT:
            nodes += [helper.make_node("Cast", [x], [v("x")], to=TensorProto.FLOAT),
                      helper.make_node("Cast", [mask_as_t], [v("mask")], to=TensorProto.FLOAT)]
            x, mask = v("x"), v("mask")
        product = out if dtype == TensorProto.FLOAT else v("y")
        nodes += [helper.make_node("Mul", [x, mask], [v("masked")], name=f"{node.name}__cuda"),
                  helper.make_node("Mul", [v("masked"), scale], [product], name=f"{node.name}__cuda_scale")]
        if dtype != TensorProto.FLOAT:
            nodes.append(helper.make_node("Cast", [product], [out], to=dtype))
        return nodes

    return rewrite_nodes(model, rewrite)
