"""Custom ``torch.autograd.Function`` s without an ONNX symbolic, kept as calls back into torch.

The exporter meets such a Function as ``prim::PythonOp``. Inlining it would bake its forward in
and replace its backward with autodiff's; refusing it would keep every model that uses one
(Bloom's GELU, fused kernels) out of the pipeline. Instead each becomes one ``reference.PythonOp``
node whose ``call`` attribute indexes a :class:`PythonCall`: the Function and its arguments, the
non-tensor ones as the trace saw them. ``reference.export.segments`` cuts the graph at these
nodes; torch runs the Function itself between the pieces, forward and backward.

Non-tensor arguments are constants of the export, like every Python value the trace reads: where
they come from the module's attributes or the inputs' schema, a change re-exports (the transition
contract's structure and schema keys).
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from typing import Any, Iterator

import torch

DOMAIN = "reference"
OP = "PythonOp"
TENSOR = object()  # placeholder for a tensor argument in PythonCall.arguments


@dataclasses.dataclass(frozen=True)
class PythonCall:
    function: type  # the torch.autograd.Function subclass
    arguments: tuple[Any, ...]  # TENSOR where the node's next input goes, else the traced constant

    @property
    def name(self) -> str:
        return f"{self.function.__module__}.{self.function.__qualname__}"

    def __call__(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        given = iter(tensors)
        result = self.function.apply(*[next(given) if a is TENSOR else a for a in self.arguments])
        return result if isinstance(result, tuple) else (result,)


_recording: contextvars.ContextVar[list[PythonCall] | None] = contextvars.ContextVar("python_calls", default=None)


@contextlib.contextmanager
def recorded() -> Iterator[list[PythonCall]]:
    """Collect the calls one export makes (the symbolic below appends to the list it yields)."""
    calls: list[PythonCall] = []
    token = _recording.set(calls)
    try:
        yield calls
    finally:
        _recording.reset(token)


def python_op(g, *args, **_attributes):
    """Symbolic for ``prim::PythonOp`` (Functions that have their own ``symbolic`` never get here)."""
    calls = _recording.get()
    node = g.original_node
    function = node.pyobj().__self__
    if calls is None:  # an export outside ours: refuse as torch would
        raise RuntimeError(f"Couldn't export Python operator {function.__name__}")
    tensors, arguments = [], []
    for kind, arg in zip(node.cconv(), args):
        if kind == "d":
            tensors.append(arg)
            arguments.append(TENSOR)
        else:
            arguments.append(arg)
    calls.append(PythonCall(function, tuple(arguments)))
    outputs = g.op(f"{DOMAIN}::{OP}", *tensors, call_i=len(calls) - 1, name_s=function.__qualname__,
                   outputs=node.outputsSize())
    outputs = outputs if isinstance(outputs, (list, tuple)) else (outputs,)
    for out, traced in zip(outputs, node.outputs()):
        # type and rank from the trace, every size unknown: the call serves every batch size
        traced_type = traced.type()
        rank = traced_type.dim() if isinstance(traced_type, torch._C.TensorType) else None
        out.setType(traced_type.with_sizes([None] * rank) if rank is not None else traced_type)
    return outputs if len(outputs) > 1 else outputs[0]
