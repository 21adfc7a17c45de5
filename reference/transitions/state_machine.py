"""A pure state machine: what the graphs were built for + this call -> what to rebuild, and why.

The export bakes in what the trace saw: the input schema (structure, constants, dtypes, ranks),
train/eval mode (dropout, ``if self.training``), device and the module's Python attributes. The
gradient graph depends on which graph inputs need gradients and on the memory optimizer's options
(recompute rewrites the gradient graphs, never the export). Sessions follow from either.
Checking in this order makes the reason name the change the user made (a device move changes the
inputs' schema too).

A graph whose outputs hold Python values (a ``str`` such as ``f"batch{x.shape[0]}"``, a size as an
``int``) froze them at export, and they may depend on the input sizes the graph otherwise follows
dynamically: its state records the sizes too (``sizes``), and new sizes re-export. A graph holding a
recurrence unrolled over the traced length fits that length only: the length is a guard (below),
so another length re-exports and another batch size does not. Every graph fits only
the calls with size 1 on the same axes (``unit_axes``: the trace cannot tell such an axis from one
that broadcasts, and Python code may branch on ``size == 1``; :mod:`reference.export.exporter`):
another pattern of ones re-exports, and any other sizes follow dynamically. A graph whose trace
turned values into Python control flow (a mixture of experts' routing: which experts, how many),
or whose Python read a size (``if x.shape[0] > 2``, ``range(x.shape[0])``), fits the calls that
recompute the same values (``guard_values``, :mod:`reference.export.data_guards`): another value
re-exports, the reason naming the kind of the first guard that changed (``guard_kinds``).

A trace under ``torch.autocast`` records autocast's casts (float32 products in float16 or bfloat16,
softmax and losses promoted back): a graph fits only the autocast state (enabled, dtype) it was traced
in, so entering, leaving or switching autocast re-exports.

Graphs are cached per mode, like ORTModule's training and inference managers: returning to a mode
whose graph is still valid reuses it, so alternating train/eval (validation every N steps) costs
one export per mode, not one per switch. A forward under ``torch.no_grad()`` records no autograd
graph, so it never rebuilds gradients: it runs the forward of the graph already built for its mode.
"""
from __future__ import annotations

import dataclasses

import torch

from reference.nested_io import Schema
from reference.seams import Seam

AUTOCAST_KEYED = Seam("graphs keyed by the autocast state", True)

# The fixed vocabulary of reasons (``Transition.reason``).
FIRST_FORWARD = "first forward"
MODE_CHANGED = "train/eval mode changed"  # first forward in this mode; the other mode has a graph
SCHEMA_CHANGED = "input schema changed"
DEVICE_CHANGED = "device changed"
MODULE_CHANGED = "module attribute changed"
INPUTS_GRAD_CHANGED = "inputs requiring grad changed"
TRAINABLE_CHANGED = "trainable parameters changed"
MEMORY_OPTIONS_CHANGED = "memory optimizer options changed"
UNIT_AXES_CHANGED = "the input axes of size 1 changed (a trace may specialize an axis of size 1)"
SIZES_CHANGED = "input sizes changed (the graph is keyed by sizes: it returns Python values)"
LENGTH_CHANGED = "the length a recurrence was unrolled over changed (the graph holds one cell per step)"
DATA_CHANGED = ("a value the trace turned into control flow changed (the graph is keyed by it: data-dependent "
                "routing such as a mixture of experts' experts hit)")
SIZE_READ_CHANGED = "a size the forward read into Python changed (the trace baked in its branch, count or value)"
AUTOCAST_CHANGED = "the autocast state changed (the trace baked in autocast's casts)"
REUSED = "reuse: nothing changed"
REASONS = (FIRST_FORWARD, MODE_CHANGED, SCHEMA_CHANGED, DEVICE_CHANGED, MODULE_CHANGED, AUTOCAST_CHANGED,
           UNIT_AXES_CHANGED, SIZES_CHANGED,
           LENGTH_CHANGED, SIZE_READ_CHANGED, DATA_CHANGED,
           INPUTS_GRAD_CHANGED, TRAINABLE_CHANGED, MEMORY_OPTIONS_CHANGED, REUSED)


def autocast_state(device: str) -> tuple:
    """What a trace under ``torch.autocast`` on ``device`` bakes in: its dtype where it is enabled."""
    keyed = AUTOCAST_KEYED.value and torch.is_autocast_enabled(device)
    return (torch.get_autocast_dtype(device),) if keyed else ()


def unit_axes(tensors) -> tuple[tuple[int, ...], ...]:
    """Per tensor, its axes of size 1: a graph traced with them fits only calls with the same ones."""
    return tuple(tuple(d for d, size in enumerate(t.shape) if size == 1) for t in tensors)


@dataclasses.dataclass(frozen=True)
class GraphState:
    schema: Schema
    training: bool
    device: str
    inputs_requiring_grad: tuple[bool, ...]  # per flattened user tensor, as declared (grad mode aside)
    trainable: tuple[bool, ...]              # per module parameter, named_parameters() order
    module_version: int = 0                  # bumped by every attribute set through the wrapper
    memory_options: tuple = ()               # memory options: optimizer level and config, gradient delivery
    unit_axes: tuple | None = None           # per user tensor, its axes of size 1
    sizes: tuple | None = None               # per user tensor, where the graph returns Python values
    guard_values: tuple | str | None = None  # where the trace baked values in: the graph's guards for this call
    guard_kinds: tuple[str, ...] = ()        # per guard, what it holds: "value", "size" or "length"
    autocast: tuple = ()                     # (dtype,) of autocast on the device, when enabled there

    @classmethod
    def of_call(cls, module, tensors, schema: Schema, device: str, module_version: int = 0,
                memory_options: tuple = (), size_keyed: bool = False) -> "GraphState":
        """The state a forward of ``module`` on flattened ``tensors`` asks for."""
        state = cls(schema, module.training, device, tuple(t.requires_grad for t in tensors),
                    tuple(p.requires_grad for _, p in module.named_parameters()), module_version, memory_options,
                    unit_axes(tensors), autocast=autocast_state(device))  # every graph: its axes of size 1
        return state.keyed_by_sizes(tensors) if size_keyed else state

    def keyed_by_sizes(self, tensors) -> "GraphState":
        """This state, recording the sizes of ``tensors`` too (for a graph that returns Python values)."""
        return dataclasses.replace(self, sizes=tuple(tuple(t.shape) for t in tensors))


@dataclasses.dataclass(frozen=True)
class Transition:
    export: bool
    build_gradient: bool
    reason: str

    @property
    def new_sessions(self) -> bool:
        return self.export or self.build_gradient


REUSE = Transition(False, False, REUSED)
# A device move changes the inputs' device too: naming the device is the more useful reason.
_EXPORT_CHECKS = (("device", DEVICE_CHANGED), ("schema", SCHEMA_CHANGED), ("training", MODE_CHANGED),
                  ("module_version", MODULE_CHANGED), ("autocast", AUTOCAST_CHANGED), ("unit_axes", UNIT_AXES_CHANGED),
                  ("sizes", SIZES_CHANGED), ("guard_values", DATA_CHANGED))


def decide(previous: GraphState | None, current: GraphState, grad_enabled: bool = True) -> Transition:
    """What one graph built for ``previous`` needs to serve ``current``."""
    if previous is None:
        return Transition(True, True, FIRST_FORWARD)
    for field, reason in _EXPORT_CHECKS:
        if getattr(previous, field) != getattr(current, field):
            return Transition(True, True, _guard_reason(previous, current) if field == "guard_values" else reason)
    if not grad_enabled:
        return REUSE
    if previous.inputs_requiring_grad != current.inputs_requiring_grad:
        return Transition(False, True, INPUTS_GRAD_CHANGED)
    if previous.trainable != current.trainable:
        return Transition(False, True, TRAINABLE_CHANGED)
    if previous.memory_options != current.memory_options:
        return Transition(False, True, MEMORY_OPTIONS_CHANGED)
    return REUSE


_GUARD_REASONS = {"value": DATA_CHANGED, "size": SIZE_READ_CHANGED, "length": LENGTH_CHANGED}


def _guard_reason(previous: GraphState, current: GraphState) -> str:
    """The kind of the first guard whose value changed; a guard graph that failed to run (a value
    computed after another one's traced value) counts as a changed value."""
    if not (isinstance(previous.guard_values, tuple) and isinstance(current.guard_values, tuple)):
        return DATA_CHANGED
    kinds = previous.guard_kinds or ("value",) * len(previous.guard_values)
    changed = (kind for kind, before, now in zip(kinds, previous.guard_values, current.guard_values) if before != now)
    return _GUARD_REASONS[next(changed, "value")]


@dataclasses.dataclass(frozen=True)
class Graphs:
    """What the graph of each mode was built for (None: not built yet). Immutable: ``step`` returns the next."""

    train: GraphState | None = None
    eval: GraphState | None = None

    def built_for(self, training: bool) -> GraphState | None:
        return self.train if training else self.eval

    def step(self, current: GraphState, grad_enabled: bool = True) -> tuple[Transition, "Graphs"]:
        """The transition for a forward call in ``current``, and the graphs after it."""
        previous = self.built_for(current.training)
        if previous is None:
            other = self.built_for(not current.training)
            transition = Transition(True, True, FIRST_FORWARD if other is None else MODE_CHANGED)
        else:
            transition = decide(previous, current, grad_enabled)
        if not transition.new_sessions:  # a reuse keeps what the graph was built for (no_grad ignores grad needs)
            return transition, self
        return transition, self.recorded(current)

    def recorded(self, state: GraphState) -> "Graphs":
        """These graphs with its mode's graph built for ``state``."""
        return dataclasses.replace(self, **{"train" if state.training else "eval": state})
