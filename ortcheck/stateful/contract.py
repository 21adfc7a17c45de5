"""The transition contract as a specification: the counters a correct pipeline shows, predicted
from what the user did alone.

It shares no code with any implementation (``reference/`` included): the reference's transition
machine is checked against it, never the other way round (docs/architecture.md, "Oracles"). The
rules, per forward call:

- a pipeline keeps one graph per mode (train/eval); the first forward in a mode exports it and
  builds its gradient graph ("first forward", or "train/eval mode changed" when the other mode
  already has one);
- the graph of the call's mode is re-exported (and its gradient graph rebuilt) when the device, the
  call's signature (input structure, dtypes, ranks, Python values; never sizes) or the module's
  attributes (set through the wrapper) differ from what it was built for, checked in that order;
- otherwise, with grad enabled, the gradient graph alone is rebuilt when the inputs requiring grad,
  the trainable parameters or the memory options (``MEMORY_OPTIONS``: the memory optimizer's, and
  how gradients are delivered) differ (they rewrite the gradient graphs, never the export); under ``torch.no_grad()`` nothing is rebuilt for them;
- each export or gradient build creates one new set of sessions; nothing falls back to eager;
- where the values the module's forward turned into Python control flow
  (``ortcheck.stateful.control_values``: a mixture of experts' experts hit) differ from those of
  the call the graph was built for, the pipeline *may* instead re-export ("a value the trace turned
  into control flow changed"): a graph that traced them fits them only. The oracle, not this
  contract, judges whether a pipeline that did not re-export still computes the right values;
- likewise where the call's sizes break a decision the forward took on the sizes of the call the graph
  was built for (``ortcheck.stateful.size_reads``: ``if x.shape[0] > 2``, ``range(x.shape[0])``,
  recorded by torch's symbolic shapes), the pipeline *may* re-export ("a size the forward read into
  Python changed"): a trace bakes in the branch, count or value that Python computed;
- likewise where the input axes of size 1 differ from those of the call the graph was built for
  (``Call.unit_axes``), the pipeline *may* re-export ("the input axes of size 1 changed"): a trace
  cannot tell an axis of 1 from one that broadcasts, nor follow code that branches on ``size == 1``
  (torch.export specializes sizes 0 and 1 for that reason). Other size changes never re-export;
- likewise where the call enters, leaves or switches the dtype of a ``torch.autocast`` region
  (``Call.autocast``), the pipeline *may* re-export ("the autocast state changed"): a trace bakes in
  autocast's casts; one that keeps a graph per autocast state may reuse it. Whether the values and
  dtypes are eager's is the oracle's to judge.
"""
from __future__ import annotations

import dataclasses

from ortcheck.impls.base import Observations, Options
from ortcheck.stateful.control_values import control_values
from ortcheck.stateful.size_reads import SizeReads, size_reads

FIRST_FORWARD = "first forward"
MODE_CHANGED = "train/eval mode changed"
SCHEMA_CHANGED = "input schema changed"
DEVICE_CHANGED = "device changed"
MODULE_CHANGED = "module attribute changed"
INPUTS_GRAD_CHANGED = "inputs requiring grad changed"
TRAINABLE_CHANGED = "trainable parameters changed"
MEMORY_OPTIONS_CHANGED = "memory optimizer options changed"
DATA_CHANGED = ("a value the trace turned into control flow changed (the graph is keyed by it: data-dependent "
                "routing such as a mixture of experts' experts hit)")
UNIT_AXES_CHANGED = "the input axes of size 1 changed (a trace may specialize an axis of size 1)"
SIZE_READ_CHANGED = "a size the forward read into Python changed (the trace baked in its branch, count or value)"
AUTOCAST_CHANGED = "the autocast state changed (the trace baked in autocast's casts)"
REUSED = "reuse: nothing changed"
REASONS = (FIRST_FORWARD, MODE_CHANGED, SCHEMA_CHANGED, DEVICE_CHANGED, MODULE_CHANGED, AUTOCAST_CHANGED, UNIT_AXES_CHANGED,
           SIZE_READ_CHANGED, DATA_CHANGED,
           INPUTS_GRAD_CHANGED, TRAINABLE_CHANGED, MEMORY_OPTIONS_CHANGED, REUSED)
COUNTERS = ("exports", "gradient_builds", "sessions", "fallbacks")
# The options that shape the gradient graphs, not the export (the memory optimizer's level and
# config, and how gradients are delivered): a change rebuilds the gradient graphs alone.
MEMORY_OPTIONS = ("memory_opt_level", "memory_opt_config", "mem_efficient_grad")


def memory_options(options: Options) -> tuple:
    """What a :class:`Call` records of ``options``: the values of :data:`MEMORY_OPTIONS`."""
    return tuple(getattr(options, name) for name in MEMORY_OPTIONS)


@dataclasses.dataclass(frozen=True)
class Call:
    """What the user controls at one forward call that a correct pipeline's graphs depend on."""

    signature: tuple
    training: bool
    device: str
    attribute_sets: int
    inputs_requiring_grad: tuple[bool, ...]
    trainable: frozenset[str]
    grad_enabled: bool = True
    memory_options: tuple = ()  # memory_options(the options in force)
    control_values: tuple | None = None  # what eager's forward read into control flow (None: not recorded)
    unit_axes: tuple | None = None  # per user tensor, its axes of size 1 (unit_axes(); None: not recorded)
    size_reads: SizeReads | None = None  # what eager's forward decided on the sizes (None: not recorded)
    autocast: tuple = ()  # (dtype,) of the torch.autocast region the call ran in; () outside one
    tensors: tuple = dataclasses.field(default=(), compare=False, repr=False)  # the user tensors (their sizes)


def unit_axes(tensors) -> tuple[tuple[int, ...], ...]:
    """What a :class:`Call` records of its tensors' sizes: per tensor, the axes of size 1."""
    return tuple(tuple(d for d, size in enumerate(t.shape) if size == 1) for t in tensors)


def eager_reads(eager, args: tuple, kwargs: dict, tensors) -> dict:
    """The :class:`Call` fields eager's run of the call fills: the values and sizes its forward read
    into control flow, the user tensors' axes of size 1, and the tensors."""
    return {"control_values": control_values(eager, args, kwargs), "unit_axes": unit_axes(tensors),
            "size_reads": size_reads(eager, args, kwargs), "tensors": tuple(tensors)}


class Contract:
    """Steps the specification call by call and holds the counters it predicts."""

    def __init__(self):
        self.built: dict[bool, Call] = {}  # training -> what that mode's graphs were built for
        self.observations = Observations(last_reason=None)
        self._allowed: tuple[Call, Observations] | None = None  # a re-export the last call also permits

    def forward(self, call: Call) -> None:
        export, build, reason = self._decide(call)
        built = self.built.get(call.training)
        self._allowed = None
        if not export and built is not None:
            permitted = _may_reexport(built, call)
            self._allowed = (call, self._after(True, True, permitted)) if permitted else None
        if export or build:
            self.built[call.training] = call
        self.observations = self._after(export, build, reason)

    def _after(self, export: bool, build: bool, reason: str) -> Observations:
        return dataclasses.replace(
            self.observations,
            exports=self.observations.exports + export,
            gradient_builds=self.observations.gradient_builds + (export or build),
            sessions=self.observations.sessions + (export or build),
            last_reason=reason,
        )

    def _decide(self, call: Call) -> tuple[bool, bool, str]:
        built = self.built.get(call.training)
        if built is None:
            return True, True, MODE_CHANGED if self.built else FIRST_FORWARD
        for field, reason in (("device", DEVICE_CHANGED), ("signature", SCHEMA_CHANGED),
                              ("attribute_sets", MODULE_CHANGED)):
            if getattr(built, field) != getattr(call, field):
                return True, True, reason
        if call.grad_enabled:
            if built.inputs_requiring_grad != call.inputs_requiring_grad:
                return False, True, INPUTS_GRAD_CHANGED
            if built.trainable != call.trainable:
                return False, True, TRAINABLE_CHANGED
            if built.memory_options != call.memory_options:
                return False, True, MEMORY_OPTIONS_CHANGED
        return False, False, REUSED

    def mismatches(self, observed: Observations) -> list[str]:
        """One line per observable counter that differs (None in ``observed``: not observable, skipped).
        Where the last call permitted a re-export for changed control values and ``observed`` shows
        exactly that, the contract follows it."""
        if self._allowed is not None and not _differences(observed, self._allowed[1]):
            call, self.observations = self._allowed
            self.built[call.training], self._allowed = call, None
            return []
        return _differences(observed, self.observations)


def _may_reexport(built: Call, call: Call) -> str | None:
    """Why a pipeline may re-export for ``call`` though the contract does not require it, if it may."""
    if built.autocast != call.autocast:
        return AUTOCAST_CHANGED
    if None not in (built.unit_axes, call.unit_axes) and built.unit_axes != call.unit_axes:
        return UNIT_AXES_CHANGED
    if built.size_reads is not None and not built.size_reads.hold_for(list(call.tensors)):
        return SIZE_READ_CHANGED
    if None not in (built.control_values, call.control_values) and built.control_values != call.control_values:
        return DATA_CHANGED
    return None


def _differences(observed: Observations, expected: Observations) -> list[str]:
    lines = []
    for name in (*COUNTERS, "last_reason"):
        seen, predicted = getattr(observed, name), getattr(expected, name)
        if seen is not None and seen != predicted:
            lines.append(f"{name}: observed {seen!r}, the transition contract predicts {predicted!r}")
    return lines
