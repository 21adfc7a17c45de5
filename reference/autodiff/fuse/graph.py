"""What the rewrites read about a graph (producers, readers, constants, element types and ranks),
and the sweep of nodes a rewrite left unread, which they all share."""
from __future__ import annotations

from collections import defaultdict
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from reference.autodiff.model_cache import per_graph
from reference.export.reads import reads

MICROSOFT = "com.microsoft"
# The doc_string of the Sums the gradient builder writes to accumulate one value's gradient: every
# input has the output's shape (each contribution was reduced to the value's shape), no broadcast.
SAME_SHAPE_SUM = "gradient accumulation: every input has the output's shape"
# Element types the products a rewrite emits compute in on CPU (onnxruntime 1.31's FusedMatMul
# kernels: float and double; Gemm the same and more).
PRODUCT_TYPES = frozenset({TensorProto.FLOAT, TensorProto.DOUBLE})


class GraphFacts:
    """Facts about ``model``'s graph as it is now (rebuild after editing)."""

    def __init__(self, model: onnx.ModelProto, types: bool = False):
        graph = model.graph
        self.producers = {name: node for node in graph.node for name in node.output if name}
        self.readers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
        for node in graph.node:
            for name in reads(node):
                self.readers[name].append(node)
        self.outputs = {value.name for value in graph.output}
        inputs = {value.name for value in graph.input}
        self.constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer if t.name not in inputs}
        for node in graph.node:
            if node.op_type == "Constant" and not node.domain and node.attribute[0].name == "value":
                self.constants[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
        self._types = _inferred_types(model) if types else {}

    def only_reader(self, name: str, node: onnx.NodeProto) -> bool:
        """Whether ``node`` is all that reads ``name`` (a graph output is read by the caller)."""
        return name not in self.outputs and all(reader is node for reader in self.readers.get(name, []))

    def scalar(self, name: str) -> float | None:
        """The value of a one-element float constant, else None."""
        value = self.constants.get(name)
        return float(value.reshape(())) if value is not None and value.size == 1 and value.dtype.kind == "f" else None

    def elem_type(self, name: str) -> int | None:
        value_type = self._types.get(name)
        return value_type.tensor_type.elem_type or None if value_type is not None else None

    def rank(self, name: str) -> int | None:
        dims = self.dims(name)
        return None if dims is None else len(dims)

    def dims(self, name: str) -> tuple[int | None, ...] | None:
        """The sizes of ``name``'s axes (None for a symbolic one), or None if its rank is unknown."""
        value_type = self._types.get(name)
        if value_type is None or not value_type.tensor_type.HasField("shape"):
            return None
        return tuple(d.dim_value if d.HasField("dim_value") else None for d in value_type.tensor_type.shape.dim)


@per_graph
def _inferred_types(model: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    """ONNX shape inference, told the element type and rank of each value :func:`_told` knows and
    it does not (it knows no com.microsoft op, nor the rank of a reduction over run-time axes, and
    leaves everything downstream untyped), pass after pass until it has nothing to add."""
    spelled = copied(model)
    for _ in range(len(model.graph.node) + 1):
        graph = onnx.shape_inference.infer_shapes(spelled).graph
        types = {value.name: value.type for value in [*graph.input, *graph.value_info, *graph.output]}
        for tensor in graph.initializer:
            types.setdefault(tensor.name, onnx.helper.make_tensor_type_proto(tensor.data_type, tensor.dims))
        told = [(node.output[0], found) for node in model.graph.node
                if _typed(types.get(node.output[0])) is None and (found := _told(node, types)) is not None]
        spelled.graph.value_info.extend(onnx.helper.make_tensor_value_info(name, elem_type, [None] * rank)
                                        for name, (elem_type, rank) in told)
        if not told:
            break
    return types


_KEEPING_REDUCTIONS = frozenset({"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"})


def _told(node: onnx.NodeProto, types: dict[str, onnx.TypeProto]) -> tuple[int, int] | None:
    """(element type, rank) of ``node``'s first output from its inputs' where ONNX's inference can't."""
    operands = [_typed(types.get(name)) for name in node.input[:2]]
    if node.op_type == "FusedMatMul" and node.domain == MICROSOFT and None not in operands:
        return operands[0][0], max(rank for _, rank in operands)
    if node.op_type in _KEEPING_REDUCTIONS and not node.domain and attribute(node, "keepdims", 1):
        return operands[0]
    return None


def _typed(value_type: onnx.TypeProto | None) -> tuple[int, int] | None:
    if value_type is None or not value_type.tensor_type.elem_type or not value_type.tensor_type.HasField("shape"):
        return None
    return value_type.tensor_type.elem_type, len(value_type.tensor_type.shape.dim)


def attribute(node: onnx.NodeProto, name: str, default=None):
    found = [onnx.helper.get_attribute_value(a) for a in node.attribute if a.name == name]
    return found[0] if found else default


def set_attributes(node: onnx.NodeProto, **values) -> None:
    """Replace (or add) the named attributes of ``node``."""
    kept = [a for a in node.attribute if a.name not in values]
    del node.attribute[:]
    node.attribute.extend(kept + [onnx.helper.make_attribute(k, v) for k, v in values.items()])


def swaps_last_two(perm: list[int]) -> bool:
    """Whether a Transpose with ``perm`` swaps the last two axes and keeps the others in place."""
    rank = len(perm)
    return rank >= 2 and list(perm) == [*range(rank - 2), rank - 1, rank - 2]


def exact_in_float32(value: float) -> bool:
    """Whether a float attribute (stored as float32) holds ``value`` exactly."""
    return bool(np.isfinite(value)) and float(np.float32(value)) == value


def copied(model: onnx.ModelProto) -> onnx.ModelProto:
    clone = onnx.ModelProto()
    clone.CopyFrom(model)
    return clone


def fold_each(model: onnx.ModelProto,
              fold: Callable[[GraphFacts, onnx.NodeProto], list[onnx.NodeProto] | None]) -> onnx.ModelProto:
    """A copy of ``model`` where each node ``fold`` answers for (the nodes that replace it, given the
    facts of the unchanged graph) is replaced; ``None`` keeps the node. Dead nodes go."""
    model = copied(model)
    facts = GraphFacts(model, types=True)
    nodes = []
    for node in model.graph.node:
        nodes += fold(facts, node) or [node]
    return replace_nodes(model, nodes)


def replace_nodes(model: onnx.ModelProto, nodes: list[onnx.NodeProto]) -> onnx.ModelProto:
    """``model`` holding ``nodes``, without the nodes nothing reads any more, importing the
    com.microsoft domain if a node uses it."""
    graph = model.graph
    del graph.node[:]
    graph.node.extend(_live(nodes, {value.name for value in graph.output}))
    if any(node.domain == MICROSOFT for node in graph.node) and not any(
            entry.domain == MICROSOFT for entry in model.opset_import):
        model.opset_import.append(onnx.helper.make_opsetid(MICROSOFT, 1))
    return model


def _live(nodes: list[onnx.NodeProto], outputs: set[str]) -> list[onnx.NodeProto]:
    needed, kept = set(outputs), []
    for node in reversed(nodes):
        if any(name in needed for name in node.output if name):
            kept.append(node)
            needed.update(reads(node))
    return kept[::-1]


def onnx_opset(model: onnx.ModelProto) -> int:
    return next((entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx")), 0)


def linear_product(facts: GraphFacts, product: onnx.NodeProto) -> dict | None:
    """``alpha``, ``trans_b`` and the output width ``n`` of a float or double ``x @ w`` (MatMul, or
    FusedMatMul with at most w transposed) with a 2-D ``w`` of known width and ``x`` of rank >= 2."""
    if product.op_type == "MatMul" and not product.domain:
        alpha, trans_b = 1.0, 0
    elif product.op_type == "FusedMatMul" and product.domain == MICROSOFT and not any(
            attribute(product, name, 0) for name in ("transA", "transBatchA", "transBatchB")):
        alpha, trans_b = attribute(product, "alpha", 1.0), attribute(product, "transB", 0)
    else:
        return None
    x, w = product.input
    dims = facts.dims(w)
    if (facts.elem_type(product.output[0]) not in PRODUCT_TYPES or (facts.rank(x) or 0) < 2 or dims is None
            or len(dims) != 2 or dims[1 - trans_b] is None):
        return None
    return {"alpha": alpha, "trans_b": trans_b, "n": dims[1 - trans_b]}


# Shape's start/end, which unflattened() reads the leading axes with.
MIN_OPSET_TO_FLATTEN = 15


def as_rows(x: str, rank: int, rows: str) -> tuple[list[onnx.NodeProto], str]:
    """(nodes, name) of ``x`` flattened to the 2-D rows a Gemm takes (a view), if its rank is > 2."""
    if rank <= 2:
        return [], x
    return [onnx.helper.make_node("Flatten", [x], [rows], axis=-1)], rows


def unflattened(result: str, like: str, width: int, output: str, prefix: str) -> list[onnx.NodeProto]:
    """Nodes reshaping 2-D ``result`` to ``like``'s leading axes and ``width`` as ``output``."""
    leading, width_name, shape = f"{prefix}/leading", f"{prefix}/width", f"{prefix}/shape"
    return [
        onnx.helper.make_node("Shape", [like], [leading], end=-1),
        onnx.helper.make_node("Constant", [], [width_name],
                              value=numpy_helper.from_array(np.array([width], dtype=np.int64))),
        onnx.helper.make_node("Concat", [leading, width_name], [shape], axis=0),
        onnx.helper.make_node("Reshape", [result, shape], [output]),
    ]
