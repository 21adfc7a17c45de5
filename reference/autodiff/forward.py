"""The model being differentiated: what rules may ask about its values, and the few edits they make.

Facts (types, symbolic dims, constants) come from ONNX shape inference with data propagation, so
symbolic sizes like ``batch`` are shared between values and broadcasting can often be settled at
build time. Edits are limited to asking a node for an optional output it did not emit (Dropout's
mask, LayerNormalization's mean and inverse std) and adding Shape nodes whose results are stashed.
"""
from __future__ import annotations

import itertools
from typing import Union

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper
from onnx.reference import ReferenceEvaluator

from reference.autodiff import symbolic_shapes
from reference.autodiff.names import UniqueNames

FLOAT_TYPES = frozenset({TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16})

# A dimension: a size, a symbol shared by values known to be equal, or unknown.
Dim = Union[int, str, None]


class ForwardModel:
    def __init__(self, model: onnx.ModelProto, names: UniqueNames):
        self.model = model
        self._names = names
        graph = model.graph
        self.nodes = [_copy(node) for node in graph.node]
        self.added_nodes: list[onnx.NodeProto] = []
        self.input_names = [value.name for value in graph.input]
        self.output_names = [value.name for value in graph.output]
        self._initializers = {t.name: t for t in graph.initializer if t.name not in set(self.input_names)}
        self._constant_nodes = {n.output[0]: n for n in graph.node if n.op_type == "Constant" and n.domain == ""}
        inferred = onnx.shape_inference.infer_shapes(_without_output_shapes(model), data_prop=True)
        self._types = {
            value.name: value.type
            for value in itertools.chain(inferred.graph.input, inferred.graph.value_info, inferred.graph.output)
        }
        for output in graph.output:  # keep the declared shape where inference found none
            if self.dims(output.name) is None and output.type.tensor_type.HasField("shape"):
                self._types[output.name] = output.type
        for tensor in graph.initializer:
            self._types.setdefault(tensor.name, onnx.helper.make_tensor_type_proto(tensor.data_type, tensor.dims))
        self._shape_nodes = {n.input[0]: n.output[0] for n in graph.node if n.op_type == "Shape" and not n.attribute}
        self._producers = {name: node for node in self.nodes for name in node.output if name}
        self._computed_from_constants = _computed_from_constants(self.nodes, set(self._initializers))
        self._folded: dict[str, np.ndarray] = {}
        self._symbolic_types: dict[str, onnx.TypeProto] | None = None

    # ---- facts -------------------------------------------------------------------------------
    def elem_type(self, name: str) -> int | None:
        value_type = self._types.get(name)
        if value_type is None:
            return None
        return value_type.tensor_type.elem_type or None

    def is_float(self, name: str) -> bool:
        """Float-typed, or of unknown type (an op without a schema): such values may carry gradients."""
        elem_type = self.elem_type(name)
        return elem_type is None or elem_type in FLOAT_TYPES

    def dims(self, name: str) -> list[Dim] | None:
        return symbolic_shapes.dims_of(self._types.get(name))

    def symbolic_dims(self, name: str) -> list[Dim] | None:
        """``name``'s dims from onnxruntime's symbolic inference (no merging: two equal names are
        equal sizes), computed on first use; None where it knows nothing or could not finish."""
        if self._symbolic_types is None:
            try:
                self._symbolic_types = symbolic_shapes.inferred_types(self.model, auto_merge=False)
            except Exception:  # noqa: BLE001 (it raises bare Exception; ONNX inference's facts stand alone then)
                self._symbolic_types = {}
        return symbolic_shapes.dims_of(self._symbolic_types.get(name))

    def rank(self, name: str) -> int:
        dims = self.dims(name)
        if dims is None:
            raise ValueError(f"rank of '{name}' is unknown after shape inference; the gradient needs it")
        return len(dims)

    def value_type(self, name: str) -> onnx.TypeProto | None:
        return self._types.get(name)

    def producer(self, name: str) -> onnx.NodeProto | None:
        """The forward node computing ``name`` (None for inputs and initializers)."""
        return self._producers.get(name)

    def constant_node(self, name: str) -> onnx.NodeProto | None:
        return self._constant_nodes.get(name)

    def initializer(self, name: str) -> onnx.TensorProto | None:
        """Initializers that are not graph inputs: constants the caller cannot override."""
        return self._initializers.get(name)

    def constant_value(self, name: str) -> np.ndarray | None:
        """The value of ``name`` if it is a constant or computed from constants only (exporters build
        Slice starts or Reduce axes as Unsqueeze(Constant)...), else None."""
        if name not in self._folded:
            if name in self._initializers:
                self._folded[name] = numpy_helper.to_array(self._initializers[name])
            elif name in self._computed_from_constants:
                self._fold(self._producers[name])
            else:
                return None
        return self._folded[name]

    def _fold(self, node: onnx.NodeProto) -> None:
        inputs = {name: self.constant_value(name) for name in node.input if name}
        opsets = {entry.domain: entry.version for entry in self.model.opset_import}
        outputs = ReferenceEvaluator(node, opsets=opsets).run(None, inputs)
        self._folded.update((name, np.asarray(value)) for name, value in zip(node.output, outputs) if name)

    # ---- edits -------------------------------------------------------------------------------
    def ensure_output(self, node: onnx.NodeProto, index: int) -> str:
        """Name of the node's output ``index``, adding it to the forward graph if the node omitted it."""
        while len(node.output) <= index:
            node.output.append("")
        if not node.output[index]:
            node.output[index] = self._names.fresh(f"{node.name or node.output[0]}_output_{index}")
        return node.output[index]

    def shape_of(self, name: str) -> str:
        """A forward value holding Shape(name): an existing Shape node's, or a new one."""
        if name not in self._shape_nodes:
            output = self._names.fresh(f"{name}_shape")
            self.added_nodes.append(onnx.helper.make_node("Shape", [name], [output], name=f"{output}_node"))
            self._shape_nodes[name] = output
        return self._shape_nodes[name]

    def producer_order(self) -> dict[str, int]:
        """Position of each value's producer in the final forward graph (inputs first)."""
        order = {name: -1 for name in self.input_names}
        for position, node in enumerate(self.nodes + self.added_nodes):
            order.update((output, position) for output in node.output if output)
        return order


_NOT_FOLDABLE = frozenset({
    "Dropout", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli", "Multinomial",
})


def _computed_from_constants(nodes: list[onnx.NodeProto], constants: set[str]) -> set[str]:
    """Outputs of Constant nodes, and of deterministic standard-domain nodes whose inputs are all such
    values or ``constants``."""
    known = set(constants)
    for node in nodes:
        has_subgraph = any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute)
        foldable = node.op_type not in _NOT_FOLDABLE and node.domain in ("", "ai.onnx") and not has_subgraph
        reads_constants = node.op_type == "Constant" or (node.input and all(not i or i in known for i in node.input))
        if foldable and reads_constants:
            known.update(name for name in node.output if name)
    return known - constants


def _without_output_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    """Exporters name output dims afresh (``out_dim_0``); inferring them from the nodes instead keeps
    the symbols shared with the inputs, which settles more broadcasting at build time."""
    stripped = onnx.ModelProto()
    stripped.CopyFrom(model)
    for output in stripped.graph.output:
        output.type.tensor_type.ClearField("shape")
    return stripped


def _copy(node: onnx.NodeProto) -> onnx.NodeProto:
    clone = onnx.NodeProto()
    clone.CopyFrom(node)
    return clone
