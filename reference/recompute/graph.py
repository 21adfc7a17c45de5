"""Facts about a forward/backward pair the memory optimizer needs, computed once per build.

Shapes come from onnxruntime's symbolic shape inference (sympy inside), which names every
dimension in terms of the graph's input dimensions (``input_0_dim1``) where ONNX's own inference
gives up after a Reshape; the plan table's symbolic savings are written in those names.
"""
from __future__ import annotations

import functools
import re

import numpy as np
import onnx
import sympy
from onnx import helper, numpy_helper

from reference.autodiff import GradientGraphs, symbolic_shapes


class ForwardFacts:
    def __init__(self, graphs: GradientGraphs):
        self.graphs = graphs
        graph = graphs.forward.graph
        self.nodes = list(graph.node)
        self.order = {id(node): k for k, node in enumerate(self.nodes)}
        self.producer = {name: node for node in self.nodes for name in node.output if name}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for node in self.nodes:
            for name in node.input:
                self.consumers.setdefault(name, []).append(node)
        self.inputs = {value.name for value in graph.input}
        self.initializers = {tensor.name: tensor for tensor in graph.initializer}
        self.stashed = set(graphs.stashed)
        self.types = symbolic_shapes.inferred_types(graphs.forward, auto_merge=True)

    def is_free(self, name: str) -> bool:
        """Readable in backward at no cost: a graph input (saved anyway), an initializer, a constant."""
        return name in self.inputs or name in self.initializers or self.constant(name) is not None

    @functools.cache
    def constant(self, name: str) -> np.ndarray | None:
        """The value of a Constant node's output (the exporter's scalars and shapes)."""
        node = self.producer.get(name)
        if node is None or node.op_type != "Constant" or node.domain:
            return None
        return numpy_helper.to_array(node.attribute[0].t)

    def dims(self, name: str) -> list[int | str] | None:
        return symbolic_shapes.dims_of(self.types.get(name))

    def elem_type(self, name: str) -> int:
        return self.types[name].tensor_type.elem_type

    def itemsize(self, name: str) -> int:
        return np.dtype(helper.tensor_dtype_to_np_dtype(self.elem_type(name))).itemsize

    def is_small_static(self, name: str, limit: int) -> bool:
        dims = self.dims(name)
        return dims is not None and all(isinstance(d, int) for d in dims) and int(np.prod(dims, dtype=np.int64)) < limit

    def elements(self, name: str) -> sympy.Expr:
        """Element count of ``name`` as a sympy expression in the graph's dimension names."""
        dims = self.dims(name)
        if dims is None or any(d is None for d in dims):
            raise ValueError(f"the shape of stashed value '{name}' is unknown after symbolic shape inference")
        return sympy.Mul(*[_dim_expr(d) for d in dims])

    def nbytes(self, name: str) -> sympy.Expr:
        return self.elements(name) * self.itemsize(name)


def _dim_expr(dim: int | str) -> sympy.Expr:
    if isinstance(dim, int):
        return sympy.Integer(dim)
    if re.fullmatch(r"[A-Za-z_]\w*", dim):
        return sympy.Symbol(dim, positive=True, integer=True)
    # names of sympy's functions (floor, Max: symbolic shape inference writes them) stay functions
    names = [name for name in re.findall(r"[A-Za-z_]\w*", dim) if not callable(getattr(sympy, name, None))]
    return sympy.sympify(dim, locals={name: sympy.Symbol(name, positive=True, integer=True) for name in names})
