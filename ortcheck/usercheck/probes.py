"""Single ops of a module, recorded from its eager run and replayed one at a time as modules.

Why ops recorded from torch rather than nodes read from the implementation's graph: every
implementation (the real ORTModule too) takes a module, so an op replayed as a one-op module goes
through the very pipeline under test, gradients included, without asking it for internals; the
oracle then judges that op alone. :func:`onnx_ops` names the ONNX ops it exports to (the exporter
every pipeline uses), so the finding speaks both languages.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import torch
from torch.overrides import TorchFunctionMode

from ortcheck.checks.runs import fresh_leaves
from ortcheck.models.onnx_export import export_training_graph
from ortcheck.nested import leaves, map_leaves


@dataclasses.dataclass
class Recorded:
    func: Callable
    args: tuple
    kwargs: dict
    grad_enabled: bool = True  # the grad mode it ran in (off under no_grad and in a custom Function's forward)
    probe: bool = True         # takes and returns floating tensors: replayable alone (args are copies)
    reads_size: bool = False   # returned a size into Python (``x.shape``, ``x.size(0)``)

    @property
    def name(self) -> str:
        func = self.func
        if getattr(func, "__name__", "") == "__get__" and hasattr(func, "__self__"):  # a property: x.shape
            return f"torch.Tensor.{func.__self__.__name__}"
        owner = getattr(func, "__module__", None) or "torch.Tensor"
        return f"{owner}.{getattr(func, '__qualname__', getattr(func, '__name__', repr(func)))}".replace(
            "torch._C.TensorBase", "torch.Tensor").replace("torch.Tensor.TensorBase", "torch.Tensor")

    def tensors(self) -> list[torch.Tensor]:
        return [leaf for leaf in leaves((self.args, self.kwargs)) if isinstance(leaf, torch.Tensor)]

    @property
    def python_values(self) -> str:
        """Its arguments other than tensors (what a trace takes as constants), tensors as ``T``."""
        return repr(map_leaves((self.args, self.kwargs), lambda leaf: _T if isinstance(leaf, torch.Tensor) else leaf))


class _Tensor:
    def __repr__(self):
        return "T"


_T = _Tensor()


class _Slot:
    def __init__(self, index: int):
        self.index = index


class OpProbe(torch.nn.Module):
    """One recorded call as a module: its tensors are the inputs, everything else is baked in."""

    def __init__(self, recorded: Recorded):
        super().__init__()
        counter = iter(range(1 << 30))
        self.func = recorded.func
        self.template = map_leaves((recorded.args, recorded.kwargs),
                                   lambda leaf: _Slot(next(counter)) if isinstance(leaf, torch.Tensor) else leaf)
        self.in_place = getattr(recorded.func, "__name__", "").endswith("_") and not getattr(
            recorded.func, "__name__", "").endswith("__")
        self.grad_enabled = recorded.grad_enabled

    def forward(self, *tensors):
        if self.in_place:  # an in-place op on an input leaf: work on a copy, as the model did on its own tensor
            tensors = [t.clone() for t in tensors]
        args, kwargs = map_leaves(self.template, lambda leaf: tensors[leaf.index] if isinstance(leaf, _Slot) else leaf)
        with torch.set_grad_enabled(self.grad_enabled and torch.is_grad_enabled()):  # as the model ran it
            return self.func(*args, **kwargs)


class _Recorder(TorchFunctionMode):
    """Records the torch calls a module makes itself (not those inside ``children``), in order; of
    those that take and return floating tensors (``probe``), a copy of their inputs taken before the call."""

    def __init__(self, children: list[torch.nn.Module]):
        super().__init__()
        self.calls: list[Recorded] = []
        self.depth = 0
        self._hooks = [h for child in children for h in (
            child.register_forward_pre_hook(lambda *_: self._enter()), child.register_forward_hook(lambda *_: self._leave()))]

    def _enter(self):
        self.depth += 1

    def _leave(self):
        self.depth -= 1

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.depth:
            return func(*args, **kwargs)
        grad_enabled, floating = torch.is_grad_enabled(), _floating((args, kwargs))
        snapshot = fresh_leaves((args, kwargs)) if floating else (args, kwargs)  # copies, requires_grad as in the run
        out = func(*args, **kwargs)
        self.calls.append(Recorded(func, *snapshot, grad_enabled, floating and _floating(out),
                                   isinstance(out, torch.Size) or getattr(func, "__name__", "") == "size"))
        return out

    def __exit__(self, *exc):
        for hook in self._hooks:
            hook.remove()
        return super().__exit__(*exc)


def record(module: torch.nn.Module, children: list[torch.nn.Module], args: tuple, kwargs: dict) -> list[Recorded]:
    """The torch calls ``module(*args, **kwargs)`` makes itself, in call order (eager, float32); the
    probes among them (``Recorded.probe``) are its ops replayable alone."""
    with torch.enable_grad(), _Recorder(children) as recorder:
        module(*args, **kwargs)
    return recorder.calls


def onnx_ops(probe: OpProbe, tensors: list[torch.Tensor]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(op types, node names) of the probe's export, Constants left out; empty when it does not export."""
    try:
        graph = export_training_graph(probe, tensors, dynamic=()).graph
    except Exception:  # naming is best effort: the finding stands on the oracle's verdict
        return (), ()
    nodes = [n for n in graph.node if n.op_type != "Constant"]
    return tuple(n.op_type for n in nodes), tuple(n.name for n in nodes)


def _floating(value: Any) -> bool:
    return any(isinstance(leaf, torch.Tensor) and leaf.is_floating_point() for leaf in leaves(value))

