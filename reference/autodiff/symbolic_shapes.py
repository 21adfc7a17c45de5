"""onnxruntime's symbolic shape inference, as the gradient builder and the memory optimizer read it.

It names each dimension as an expression in the graph's input dimensions (``input_0_dim1``) and
carries it through Shape/Gather/Concat/Reshape arithmetic, where ONNX's own inference mints a
fresh unknown symbol; so two values it gives the same expression have the same size at run time.
``auto_merge`` makes it also assume that two different symbols meeting in a broadcast are equal:
fine for estimating memory, never for deciding that a gradient needs no reduction.

It does not know com.microsoft FusedMatMul (which the fuse stage writes), so it reads a twin of
the graph with a Transpose and a MatMul of the same shapes in its place; nor the reductions other
than ReduceSum whose axes are an input (opset 18: ``F.normalize``'s ReduceL2), read as the ReduceSum
of the same axes (the same shape). When it cannot finish it
writes its partial model into the working directory and raises; it runs in a directory of its own.
Its warnings (a broadcast of two symbols it may not merge) are its way of saying "unknown": muted.
"""
from __future__ import annotations

import contextlib
import logging
import tempfile

import onnx
from onnx import helper
from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

from reference.autodiff.fuse.graph import MICROSOFT, GraphFacts, attribute, copied
from reference.autodiff.model_cache import per_graph
from reference.export.detach import DOMAIN as STOP_GRADIENT_DOMAIN, OP as STOP_GRADIENT


def dims_of(value_type: onnx.TypeProto | None) -> list[int | str | None] | None:
    """The axes of a tensor type: a size, a symbol, or None where unknown; None where the rank is."""
    if value_type is None or not value_type.tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in value_type.tensor_type.shape.dim]


@per_graph
def inferred_types(model: onnx.ModelProto, auto_merge: bool) -> dict[str, onnx.TypeProto]:
    """Every value's type with symbolic dimensions; raises when the inference cannot finish."""
    with tempfile.TemporaryDirectory() as scratch, contextlib.chdir(scratch), _muted(_LOGGER):
        inferred = SymbolicShapeInference.infer_shapes(_shape_twin(model), auto_merge=auto_merge,
                                                       guess_output_rank=False)
    return {v.name: v.type for v in [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]}


_LOGGER = logging.getLogger(SymbolicShapeInference.__module__)


@contextlib.contextmanager
def _muted(logger: logging.Logger):
    disabled, logger.disabled = logger.disabled, True
    try:
        yield
    finally:
        logger.disabled = disabled


def _shape_twin(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with each FusedMatMul as the Transpose and MatMul of the same shapes, and each
    ``reference.StopGradient`` (what forward computed under ``no_grad``: rotary tables...) as the
    Identity it is, its output under the same name: the inference knows neither op."""
    twinned = {(MICROSOFT, "FusedMatMul"), (STOP_GRADIENT_DOMAIN, STOP_GRADIENT)}
    if not any((node.domain, node.op_type) in twinned or _axes_input_reduction(node) for node in model.graph.node):
        return model
    facts, twin = GraphFacts(model, types=True), copied(model)
    nodes = []
    for node in twin.graph.node:
        if node.op_type == STOP_GRADIENT and node.domain == STOP_GRADIENT_DOMAIN:
            nodes.append(helper.make_node("Identity", list(node.input), list(node.output), name=node.name))
            continue
        if _axes_input_reduction(node):
            node.op_type = "ReduceSum"
            nodes.append(node)
            continue
        if node.op_type != "FusedMatMul" or node.domain != MICROSOFT:
            nodes.append(node)
            continue
        operands = list(node.input)
        for k, flag in enumerate(("transA", "transB")):
            rank = facts.rank(operands[k])
            if attribute(node, flag, 0) and rank is not None and rank >= 2:
                swapped = f"{node.output[0]}/shape_twin/{flag}"
                nodes.append(helper.make_node("Transpose", [operands[k]], [swapped],
                                              perm=[*range(rank - 2), rank - 1, rank - 2]))
                operands[k] = swapped
        nodes.append(helper.make_node("MatMul", operands, list(node.output), name=node.name))
    del twin.graph.node[:]
    twin.graph.node.extend(nodes)
    return twin


def _axes_input_reduction(node: onnx.NodeProto) -> bool:
    return not node.domain and node.op_type.startswith("Reduce") and node.op_type != "ReduceSum" and len(node.input) > 1
