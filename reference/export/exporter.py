"""``torch.onnx.export`` (TorchScript, training mode, no constant folding) with parameters as inputs.

Parameters and buffers become graph inputs, not initializers, so one graph serves every optimizer
step and gradients can be asked for by input name. Every dimension of every user input and output
is a dynamic axis, except that the axes of size 1 matter: a trace cannot tell an axis of 1 from one
that broadcasts (transformers' ``if batch_size != position_ids.shape[0]: expand`` traced at batch 1
keeps one row), nor follow code that branches on ``size == 1``, so a graph fits the calls with size
1 on the same axes and another pattern of ones re-exports (``reference.transitions``); other sizes
never do, only the schema does. Buffers forward writes
(running statistics, counters, EMAs) are extra outputs after the user's (``written_buffers``), the
new values the caller writes back; a write the trace cannot see is refused by name.
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import warnings
from typing import Iterator, Sequence

import onnx
import torch
from torch.onnx import _constants

from reference import nested_io
from reference.export import python_calls, remembered
from reference.export.flat_module import FlatModule
from reference.export.branches import reshape_shape_only_ifs
from reference.export.detach import define_stop_gradient
from reference.export.embeddings import record_embeddings
from reference.export.errors import ExportError
from reference.export.simplify import (drop_zero_dropouts, explicit_same_pads, fold_integer_constants,
                                       output_padding_as_pads)
from reference.export.symbolics import registered as symbolics_registered
from reference.seams import Seam

AUTOCAST_TRACED = Seam("exports under the caller's autocast state", True)


@dataclasses.dataclass(frozen=True)
class ExportedGraph:
    model: onnx.ModelProto
    input_names: tuple[str, ...]  # one per flattened user tensor, in flatten order
    state_names: tuple[str, ...]  # graph inputs fed from the module's parameters and buffers
    state_keys: tuple[str, ...]   # their names in module.named_parameters()/named_buffers()
    output_names: tuple[str, ...]  # the user's outputs, then the written buffers' new values, then the guards
    output_schema: nested_io.Schema
    written_buffers: tuple[str, ...] = ()  # keys of the buffers forward writes, as outputs before the guards
    python_calls: tuple[python_calls.PythonCall, ...] = ()  # the Functions its reference.PythonOp nodes call
    guard_values: tuple[tuple, ...] = ()  # traced values baked into control flow (data_guards), the last outputs
    guard_kinds: tuple[str, ...] = ()  # per guard, what it holds (data_guards: a value, a size, an unrolled length)

    @property
    def guard_names(self) -> tuple[str, ...]:
        return self.output_names[len(self.output_names) - len(self.guard_values):]

    @property
    def guards_follow_sizes(self) -> bool:
        """Every guard computed from input sizes alone: its values change only where those sizes do."""
        return bool(self.guard_kinds) and set(self.guard_kinds) == {"size"}

    @property
    def keyed_by_sizes(self) -> bool:
        """Right only at the traced input sizes: it returns Python values computed at export."""
        return self.output_schema.holds_python_values


def export_module(module: torch.nn.Module, tensors: Sequence[torch.Tensor], schema: nested_io.Schema,
                  training: bool, opset: int | None = None) -> ExportedGraph:
    """The training (or eval) graph of ``module`` on ``tensors``: traced, or remembered from a trace of
    the same call (:mod:`reference.export.remembered`)."""
    return remembered.export(_traced, module, tensors, schema, training, opset or _constants.ONNX_DEFAULT_OPSET)


def _traced(module: torch.nn.Module, tensors: Sequence[torch.Tensor], schema: nested_io.Schema, training: bool,
            opset: int) -> ExportedGraph:
    # The exporter restores the traced module's mode afterwards: it must be the mode we export in,
    # or exporting in eval would leave the user's module training.
    flat = FlatModule(module, schema).train(training)
    input_names = tuple(f"input_{i}" for i in range(len(tensors)))
    mode = torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL
    buffer = io.BytesIO()
    try:
        with torch.no_grad(), warnings.catch_warnings(), _default_dtype(_float_dtypes(module, tensors)), \
                _buffers_kept(module, flat), symbolics_registered(opset), _autocast_uncached(tensors), \
                python_calls.recorded() as calls:
            warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer warnings
            # autograd_inlining=False: a custom autograd.Function stays one op, exported by its own
            # ``symbolic`` or kept as a call back into torch (python_calls); inlined, its forward
            # would be traced and its backward silently replaced by autodiff's.
            torch.onnx.export(flat, tuple(t.detach() for t in tensors), buffer, dynamo=False, training=mode,
                              do_constant_folding=False, export_params=True, keep_initializers_as_inputs=True,
                              input_names=list(input_names), opset_version=opset, autograd_inlining=False,
                              dynamic_axes=_dynamic_axes(input_names, tensors))
    except ExportError:
        raise
    except Exception as error:  # the exporter raises many types; the caller decides about fallback
        raise ExportError(f"torch.onnx.export failed for {type(module).__name__}: {error}") from error
    model = onnx.load_model_from_string(buffer.getvalue())
    define_stop_gradient(model)
    record_embeddings(model, module)
    drop_zero_dropouts(model)
    explicit_same_pads(model)
    output_padding_as_pads(model)
    fold_integer_constants(model)
    reshape_shape_only_ifs(model)
    state_names, state_keys = _lift_state(model, flat)
    output_names = tuple(value.name for value in model.graph.output)
    return ExportedGraph(model, input_names, state_names, state_keys, output_names, flat.output_schema, flat.written,
                         tuple(calls), flat.guards.values, tuple(flat.guards.kinds))


def _autocast_uncached(tensors: Sequence[torch.Tensor]):
    """The caller's autocast state, traced as it is, with autocast's cache of cast weights off: a weight
    cast earlier in the same autocast region (an eager call of the same module) would come out of the
    cache with no trace behind it and be exported as a constant (pytorch#84092)."""
    devices = {t.device.type for t in tensors} | {"cpu"}
    enabled = [d for d in sorted(devices) if torch.is_autocast_enabled(d)]
    if not enabled:
        return contextlib.nullcontext()
    if not AUTOCAST_TRACED.value:
        return torch.autocast(enabled[0], enabled=False)
    device = enabled[0]
    return torch.autocast(device, dtype=torch.get_autocast_dtype(device), cache_enabled=False)


@contextlib.contextmanager
def _buffers_kept(module: torch.nn.Module, flat: FlatModule) -> Iterator[None]:
    """Export traces forward once: every buffer is put back as it was (the same object, the same
    values) afterwards. Refused by name: buffers forward adds or removes (the graph has a fixed set
    of inputs and outputs), and values changed by a write the trace did not see (inside an op's
    kernel, as ``aten::batch_norm``'s running statistics): the buffer would silently stop updating."""
    saved = {name: (b, b._version, b.detach().clone()) for name, b in module.named_buffers()}
    try:
        yield
    finally:
        current = dict(module.named_buffers())
        unseen = [name for name, (b, _, values) in saved.items()
                  if name not in flat.written and current.get(name) is b and not _same(b, values)]
        with torch.no_grad():
            for name, (b, version, values) in saved.items():
                if current.get(name) is not b:
                    _set_buffer(module, name, b)
                if b._version != version or name in unseen:
                    b.copy_(values)

        changed = sorted(set(current) ^ set(saved))
        for name in set(current) - set(saved):
            _set_buffer(module, name, None)
    if changed:
        raise ExportError(f"{type(module).__name__}'s forward adds or removes buffer(s) {', '.join(changed)}: the "
                          "exported graph has a fixed set of inputs and outputs")
    if unseen:
        raise ExportError(f"{type(module).__name__}'s forward writes buffer(s) {', '.join(unseen)} in a way the "
                          "trace cannot see (inside an op's kernel, through .data): the exported graph cannot write "
                          "them back")


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return bool(((a == b) | (a != a) & (b != b)).all())  # NaN where NaN was


def _set_buffer(module: torch.nn.Module, name: str, value: torch.Tensor | None) -> None:
    owner, _, leaf = name.rpartition(".")
    owner = module.get_submodule(owner)
    if value is None:
        owner._buffers.pop(leaf, None)
    else:
        owner._buffers[leaf] = value


@contextlib.contextmanager
def _default_dtype(dtypes: set[torch.dtype]) -> Iterator[None]:
    """Export under float64 as torch's default dtype when everything floating is float64.

    The exporter computes ops whose operands are all 0-d tensors in the default dtype (it treats
    them like Python scalars), so a float64 model would silently run its 0-d arithmetic in float32.
    A model mixing float32 with 0-d float64 arithmetic keeps that limitation.
    """
    previous = torch.get_default_dtype()
    if dtypes == {torch.float64}:
        torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def _float_dtypes(module: torch.nn.Module, tensors: Sequence[torch.Tensor]) -> set[torch.dtype]:
    state = [*module.parameters(), *module.buffers(), *tensors]
    return {t.dtype for t in state if t.dtype in (torch.float32, torch.float64)}


def _dynamic_axes(names: Sequence[str], tensors: Sequence[torch.Tensor]) -> dict[str, dict[int, str]]:
    return {name: {d: f"{name}_dim{d}" for d in range(t.dim())} for name, t in zip(names, tensors) if t.dim()}


def _lift_state(model: onnx.ModelProto, flat: FlatModule) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Drop the initializers that hold parameters/buffers; they stay graph inputs, fed each call."""
    state = {f"module.{k}": k for k, _ in [*flat.module.named_parameters(), *flat.module.named_buffers()]}
    graph_inputs = [value.name for value in model.graph.input]
    kept = [init for init in model.graph.initializer if init.name not in state]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    lifted = [name for name in graph_inputs if name in state]
    return tuple(lifted), tuple(state[name] for name in lifted)
