"""Values the trace turned into Python control flow, kept as guards the graph recomputes.

The TorchScript tracer records tensor ops, not Python: where forward converts a tensor computed
from the inputs' or parameters' *values* into a Python value (``bool(t)``, ``int(t)``,
``operator.index(t)``, ``t.item()``, ``t.tolist()``) or iterates over a tensor whose length depends
on values (``for e in mask.nonzero()``: ``unbind``), the graph holds the branch, count or index the
trace saw. A mixture-of-experts layer as transformers writes it does both: it loops over the experts
its router hit this batch and picks each one's weights by index. Another batch routes elsewhere, so
the graph fits only routings that bake the same values: with another number of experts hit
onnxruntime refuses to split; with the same number but other experts it would silently use the
wrong ones.

So each such value becomes a guard: an extra graph output (after the user's outputs and written
buffers), its traced value recorded. Before each call the wrapper runs the guards' own small graph
(the part of the forward graph they depend on, :func:`guard_model`) and re-exports when one differs
(``reference.transitions``: a value the trace turned into control flow changed, or a size the
forward read into Python did; each guard keeps its kind for that reason). Sizes the module
*returns* are not guards: :mod:`reference.export.traced_numbers` makes the graph compute them.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import onnx
import torch
from torch.overrides import TorchFunctionMode

from reference.seams import Seam

# Fault injection (reference.seams): False lets sizes read into Python go unguarded (baked at the traced size).
SIZE_READS_GUARDED = Seam("sizes read into Python become guards", True)

# Python conversions the tracer bakes a tensor's value into; ``unbind`` bakes the length of a dim.
_VALUE_READS = frozenset({"__bool__", "__int__", "__index__", "__float__", "item", "tolist"})
# Ops whose result's size depends on the values of their input.
_VALUE_SIZED = frozenset({"aten::nonzero", "aten::nonzero_numpy", "aten::masked_select", "aten::unique_dim",
                          "aten::_unique2", "aten::unique_consecutive", "aten::repeat_interleave"})


# What a guard holds (``DataGuards.kinds``), which names the reason when it changes.
VALUE, SIZE, LENGTH = "value", "size", "length"


class DataGuards(TorchFunctionMode):
    """Collects, while tracing, the tensors whose traced values the graph depends on as constants."""

    def __init__(self, read_elsewhere: set[int] = frozenset()):
        super().__init__()
        self.tensors: list[torch.Tensor] = []
        self.kinds: list[str] = []  # per tensor: VALUE, SIZE or LENGTH
        self._read_elsewhere = read_elsewhere  # ids of tensors whose read value the graph does not use

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if torch._C._get_tracing_state() is not None and args and isinstance(args[0], torch.Tensor):
            if name in _VALUE_READS and id(args[0]) not in self._read_elsewhere:
                kind = _kind(args[0])
                if kind:
                    self.add(args[0].reshape(-1), kind)
            elif name == "unbind" and _value_sized(args[0]):
                self.add(torch._shape_as_tensor(args[0]), VALUE)
        return func(*args, **kwargs)

    def add(self, tensor: torch.Tensor, kind: str) -> None:
        self.tensors.append(tensor)
        self.kinds.append(kind)

    @property
    def values(self) -> tuple[tuple, ...]:
        """Each guard's traced value, as the guard graph will return it."""
        return tuple(tuple(t.tolist()) for t in self.tensors)


@contextlib.contextmanager
def collected(read_elsewhere: set[int] = frozenset()) -> Iterator[DataGuards]:
    with DataGuards(read_elsewhere) as guards:
        yield guards


@contextlib.contextmanager
def untraced() -> Iterator[None]:
    """Python run outside the trace: sizes are plain ints, nothing read becomes a guard (for checks
    the graph's key already covers, such as a norm refusing a batch of 1: every graph is keyed by
    its axes of size 1)."""
    state = torch._C._get_tracing_state()
    torch._C._set_tracing_state(None)
    try:
        yield
    finally:
        torch._C._set_tracing_state(state)


def _kind(tensor: torch.Tensor) -> str | None:
    """What a Python read of ``tensor`` bakes in: values, sizes alone, or nothing (a constant)."""
    if _reads_values(tensor) or _value_sized(tensor, through_sizes=True):
        return VALUE  # a size of nonzero()'s result follows values
    sized = any(node.kind() == "aten::size" for node in _trace_nodes(tensor))
    return SIZE if sized and SIZE_READS_GUARDED.value else None


def _trace_nodes(tensor: torch.Tensor, through_sizes: bool = False) -> Iterator[torch._C.Node]:
    """The trace's nodes ``tensor`` was computed from, each once (not those a size's input was
    computed from, unless ``through_sizes``)."""
    try:
        stack = [torch._C._get_value_trace(tensor).node()]
    except RuntimeError:  # not a value of this trace: a constant
        return
    seen = set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        yield node
        if through_sizes or node.kind() != "aten::size":  # a size does not read its input's values
            stack.extend(value.node() for value in node.inputs())


def _reads_values(tensor: torch.Tensor) -> bool:
    """Whether the trace computed ``tensor`` from the values of a graph input (input or parameter)."""
    return any(node.kind() == "prim::Param" for node in _trace_nodes(tensor))


def _value_sized(tensor: torch.Tensor, through_sizes: bool = False) -> bool:
    """Whether ``tensor``'s size may depend on values: an op whose result's size does came before it."""
    return any(node.kind() in _VALUE_SIZED for node in _trace_nodes(tensor, through_sizes))


def guard_model(model: onnx.ModelProto, guard_names: tuple[str, ...]) -> onnx.ModelProto:
    """The part of ``model`` that computes ``guard_names``: the nodes they depend on, the graph
    inputs those read, and the model's functions and opsets (shared by copy)."""
    producers = {output: node for node in model.graph.node for output in node.output}
    needed, stack = set(), list(guard_names)
    while stack:
        name = stack.pop()
        if name in needed:
            continue
        needed.add(name)
        node = producers.get(name)
        if node is not None:
            stack.extend(value for value in node.input if value)
            stack.extend(_subgraph_reads(node))
    guard = onnx.ModelProto()
    guard.CopyFrom(model)
    nodes = [node for node in model.graph.node if any(output in needed for output in node.output)]
    del guard.graph.node[:]
    guard.graph.node.extend(nodes)
    kept_inputs = [value for value in model.graph.input if value.name in needed]
    del guard.graph.input[:]
    guard.graph.input.extend(kept_inputs)
    kept_inits = [init for init in model.graph.initializer if init.name in needed]
    del guard.graph.initializer[:]
    guard.graph.initializer.extend(kept_inits)
    outputs = {value.name: value for value in model.graph.output}
    del guard.graph.output[:]
    guard.graph.output.extend(outputs[name] for name in guard_names)
    return guard


def _subgraph_reads(node: onnx.NodeProto) -> list[str]:
    """Names an If/Loop/Scan body reads from the enclosing graph."""
    reads = []
    for attribute in node.attribute:
        for graph in [attribute.g, *attribute.graphs]:
            for inner in graph.node:
                reads += [value for value in inner.input if value] + _subgraph_reads(inner)
    return reads
