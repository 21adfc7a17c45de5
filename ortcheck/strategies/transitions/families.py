"""Hypothesis strategies of actions, grouped by what they change (one family per kind of transition).

Every family also draws plain forwards at the same or other sizes (``Step`` is the state
machine's own rule): a family's sequences then mix its changes with the calls that must notice
them, and a deviation names the kind of transition it is about.

:data:`EXAMPLES` are each family's canonical sequences, run before any drawn one (as hypothesis'
``@example`` s are): the transition a family is about is then exercised on every run, whatever the
seed, so a pipeline that gets it wrong fails every time, not only when the draw happens to hit it.
"""
from __future__ import annotations

from hypothesis import strategies as st

from ortcheck.models.transition_subject import PARAMETERS
from ortcheck.strategies.transitions.actions import (
    Forward, MoveTo, SetAttribute, SetMemoryOptimizer, SetMode, SetRequiresGrad, SetTrainable, Step,
)

SEEDS = st.integers(0, 255)
PLAIN_FORWARDS = st.builds(Forward, sizes=st.sampled_from(["same", "other"]), seed=SEEDS)

CHANGES = {
    "sizes": None,
    "structure": st.one_of(st.builds(Forward, rank=st.sampled_from([2, 3])),
                           st.builds(Forward, dtype=st.sampled_from(["float32", "float16"])),
                           st.builds(Forward, with_y=st.booleans())),
    "bool_values": st.builds(Forward, flag=st.booleans()),
    "str_values": st.builds(Forward, reduction=st.sampled_from(["none", "sum", "mean"])),
    "int_values": st.builds(Forward, repeats=st.integers(0, 2)),
    "number_values": st.builds(Forward, factor=st.sampled_from([2, 3, -1, 0.5, 3.0, -1.5])),
    "requires_grad": st.builds(SetRequiresGrad, input=st.sampled_from(["x", "y"]), value=st.booleans()),
    "frozen_params": st.builds(SetTrainable, param=st.sampled_from(PARAMETERS), value=st.booleans()),
    "attributes": st.builds(SetAttribute, value=st.sampled_from([0.5, 1.0, 2.0])),
    "modes": st.builds(SetMode, training=st.booleans()),
    "no_grad": st.builds(Forward, sizes=st.sampled_from(["same", "other"]), no_grad=st.just(True), seed=SEEDS),
    "device": st.builds(MoveTo, device=st.sampled_from(["cpu", "cuda"])),
    "recompute": st.builds(SetMemoryOptimizer, level=st.sampled_from([0, 1, 2])),
    "autocast": st.builds(Forward, autocast=st.sampled_from(["off", "float16", "bfloat16"]), seed=SEEDS),
}
FAMILIES = (*CHANGES, "mixed")
GPU_FAMILIES = ("device",)


def family_actions(family: str, device: str = "cpu") -> st.SearchStrategy:
    """Actions of ``family`` (``mixed``: all of them; device moves only when running on cuda)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; valid: {', '.join(FAMILIES)}")
    if family == "mixed":
        changes = [s for name, s in CHANGES.items() if s is not None and (name not in GPU_FAMILIES or device == "cuda")]
        return st.one_of(PLAIN_FORWARDS, st.one_of(changes))
    changes = CHANGES[family]
    return PLAIN_FORWARDS if changes is None else st.one_of(PLAIN_FORWARDS, changes)


EXAMPLES: dict[str, tuple[tuple, ...]] = {
    "sizes": ((Forward(), Step(), Forward(sizes="other"), Step(), Forward(sizes="other")),),
    "structure": ((Forward(), Forward(rank=3), Step(), Forward(dtype="float16"), Step(), Forward(with_y=False),
                   Step()),),
    "bool_values": ((Forward(flag=True), Forward(flag=False), Step()),),
    "str_values": ((Forward(reduction="sum"), Step(), Forward(reduction="none"), Step(), Forward(reduction="mean")),),
    "int_values": ((Forward(repeats=0), Forward(repeats=1), Step()),),
    # A number kept for a second training call, then changed (value, then int -> float of equal value).
    "number_values": ((Forward(factor=2), Step(), Forward(factor=2, sizes="other"), Step(), Forward(factor=0.5),
                       Step(), Forward(factor=3), Step(), Forward(factor=3.0), Step()),),
    "requires_grad": ((Forward(), SetRequiresGrad(input="x", value=False), Forward(), Step(),
                       SetRequiresGrad(input="y", value=True), Forward(), Step()),),
    "frozen_params": ((SetTrainable(param="lin.weight", value=False), Forward(), Forward(), Step(),
                       SetTrainable(param="lin.weight", value=True), Forward(), Step()),),
    "attributes": ((Forward(), Step(), SetAttribute(value=0.5), Forward(), Step()),),
    "modes": ((SetMode(training=False), Forward(), Step(), SetMode(training=True), Forward(), Step(),
               SetMode(training=False), Forward()),),
    "no_grad": ((Forward(no_grad=True), Forward(), Step(), Forward(sizes="other", no_grad=True)),),
    "device": ((Forward(), Step(), MoveTo(device="cuda"), Forward(), Step(), MoveTo(device="cpu"), Forward()),),
    "recompute": ((Forward(), Step(), SetMemoryOptimizer(level=1), Forward(), Step(), SetMemoryOptimizer(level=2),
                   Forward(no_grad=True), Forward(sizes="other"), Step(), SetMemoryOptimizer(level=0),
                   SetMode(training=False), Forward(), Step()),),
    # mixed precision from the first call, then off (a graph kept from the bfloat16 call is caught by the
    # float32 oracle), to the other dtype, and back, between training steps
    "autocast": ((Forward(autocast="bfloat16"), Step(), Forward(autocast="off"), Step(), Forward(autocast="float16"),
                  Step(), Forward(sizes="other"), Step(), Forward(autocast="bfloat16"), Step()),),
}


def family_examples(family: str, device: str = "cpu") -> tuple[tuple, ...]:
    """The canonical sequences of ``family`` (``mixed``: every family's that can run on ``device``)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; valid: {', '.join(FAMILIES)}")
    if family == "mixed":
        return tuple(example for name, examples in EXAMPLES.items()
                     if name not in GPU_FAMILIES or device == "cuda" for example in examples)
    return EXAMPLES[family]
