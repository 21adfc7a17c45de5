"""What a gradient rule writes with: the backward graph under construction.

Rules emit backward nodes through ``op``/``emit`` and read forward values through ``forward``,
which records how each value reaches the backward graph: a model input the caller passes again, a
constant copied over, or an activation the forward graph must stash. Constants and shapes are
cached so rules share them instead of emitting duplicates.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from reference.autodiff.forward import Dim, ForwardModel
from reference.autodiff.names import UniqueNames

# Values computed from constants are copied into the backward graph up to this many elements;
# bigger ones are cheaper to stash than to store twice.
_MAX_COPIED_CONSTANT = 4096


class GradientContext:
    def __init__(self, forward_model: ForwardModel, names: UniqueNames):
        self.forward_model = forward_model
        self.names = names
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.needed_inputs: list[str] = []
        self.stashed: list[str] = []
        self.scope = "grad"
        self._imported: set[str] = set()
        self._produced: dict[str, onnx.NodeProto] = {}
        self._constants: dict[tuple, str] = {}
        self._shapes: dict[str, str] = {}
        self._renamed: dict[str, str] = {}
        self._exposed: set[str] = set()
        self._read: set[str] = set()  # inputs of the backward nodes so far (expose asks, once per gradient)

    # ---- emitting backward nodes ---------------------------------------------------------------
    def emit(self, op_type: str, inputs: Sequence[str], num_outputs: int = 1, **attrs: Any) -> list[str]:
        base = f"{self.scope}_grad/{op_type}"
        node_name = self.names.fresh(base)
        outputs = [self.names.fresh(f"{node_name}_output_{k}") for k in range(num_outputs)]
        node = helper.make_node(op_type, list(inputs), outputs, name=node_name, **attrs)
        self._append(node)
        self._produced.update((output, node) for output in outputs)
        return outputs

    def _append(self, node: onnx.NodeProto) -> None:
        self.nodes.append(node)
        self._read.update(node.input)

    def op(self, op_type: str, *inputs: str, **attrs: Any) -> str:
        """Emit a single-output node and return its output."""
        return self.emit(op_type, inputs, **attrs)[0]

    def add(self, a: str, b: str) -> str:
        return self.op("Add", a, b)

    def sub(self, a: str, b: str) -> str:
        return self.op("Sub", a, b)

    def mul(self, a: str, b: str) -> str:
        return self.op("Mul", a, b)

    def div(self, a: str, b: str) -> str:
        return self.op("Div", a, b)

    def neg(self, a: str) -> str:
        return self.op("Neg", a)

    # ---- constants ---------------------------------------------------------------------------
    def constant(self, array: np.ndarray) -> str:
        array = np.asarray(array)
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self._constants:
            name = self.names.fresh(f"{self.scope}_grad/const")
            self.initializers.append(numpy_helper.from_array(array, name))
            self._constants[key] = name
        return self._constants[key]

    def scalar(self, value: float, like: str) -> str:
        """A rank-0 constant with the element type of forward value ``like``."""
        return self.constant(np.array(value, dtype=self.np_dtype(like)))

    def ints(self, values: Sequence[int]) -> str:
        return self.constant(np.array(list(values), dtype=np.int64))

    def zeros(self, shape: str, like: str) -> str:
        """Zeros of run-time ``shape`` with the element type of forward value ``like``."""
        zero = numpy_helper.from_array(np.zeros(1, dtype=self.np_dtype(like)))
        return self.op("ConstantOfShape", shape, value=zero)

    def zeros_like(self, name: str) -> str:
        """Zeros shaped and typed like forward value ``name``."""
        return self.zeros(self.shape(name), like=name)

    # ---- forward values ----------------------------------------------------------------------
    def forward(self, name: str) -> str:
        """Make forward value ``name`` readable in the backward graph, under the same name."""
        if name not in self._imported:
            self._imported.add(name)
            forward_model = self.forward_model
            if name in forward_model.input_names:
                self.needed_inputs.append(name)
            elif (node := forward_model.constant_node(name)) is not None:
                self._append(node)
            elif (tensor := forward_model.initializer(name)) is not None:
                self.initializers.append(tensor)
            elif (value := forward_model.constant_value(name)) is not None and value.size <= _MAX_COPIED_CONSTANT:
                self.initializers.append(numpy_helper.from_array(value, name))
            else:
                self.stashed.append(name)
        return name

    def forward_output(self, node: onnx.NodeProto, index: int) -> str:
        """Output ``index`` of forward ``node`` (added to the forward graph if missing), readable here."""
        return self.forward(self.forward_model.ensure_output(node, index))

    def shape(self, name: str) -> str:
        """Shape of forward value ``name``: a constant when static, else computed where it is cheapest.

        Stashing the small shape instead of the value keeps big activations out of the stash.
        """
        if name not in self._shapes:
            dims = self.dims(name)
            if dims is not None and all(isinstance(d, int) for d in dims):
                self._shapes[name] = self.ints(dims)
            elif name in self._imported:
                self._shapes[name] = self.op("Shape", name)
            else:
                self._shapes[name] = self.forward(self.forward_model.shape_of(name))
        return self._shapes[name]

    def dim_size(self, name: str, axis: int) -> str:
        """Size of forward value ``name`` along ``axis`` as a 1-element int64 tensor."""
        size = (self.dims(name) or [None] * (axis + 1))[axis]
        if isinstance(size, int):
            return self.ints([size])
        return self.op("Gather", self.shape(name), self.ints([axis]))

    # ---- facts about forward values --------------------------------------------------------------
    def rank(self, name: str) -> int:
        return self.forward_model.rank(name)

    def dims(self, name: str) -> list[Dim] | None:
        return self.forward_model.dims(name)

    def symbolic_dims(self, name: str) -> list[Dim] | None:
        return self.forward_model.symbolic_dims(name)

    def elem_type(self, name: str) -> int:
        elem_type = self.forward_model.elem_type(name)
        if elem_type is None:
            raise ValueError(f"element type of '{name}' is unknown after shape inference")
        return elem_type

    def np_dtype(self, name: str) -> np.dtype:
        return helper.tensor_dtype_to_np_dtype(self.elem_type(name))

    def constant_value(self, name: str) -> np.ndarray | None:
        return self.forward_model.constant_value(name) if name else None

    def as_int64(self, name: str) -> str:
        """Forward integer tensor ``name`` as int64 (Slice/Gather indices may be int32)."""
        value = self.forward(name)
        return value if self.elem_type(name) == TensorProto.INT64 else self.op("Cast", value, to=TensorProto.INT64)

    # ---- finishing ---------------------------------------------------------------------------
    def expose(self, value: str, name: str) -> str:
        """Make ``value`` a backward output called ``name``: rename its producer's output when nothing
        else reads it (no copy), else add an Identity."""
        value = self._renamed.get(value, value)
        producer = self._produced.get(value)
        if producer is None or value in self._exposed or value in self._read:
            self._append(helper.make_node("Identity", [value], [name], name=self.names.fresh(f"{name}_identity")))
        else:
            producer.output[list(producer.output).index(value)] = name
            self._renamed[value] = name
        self._exposed.add(name)
        return name
