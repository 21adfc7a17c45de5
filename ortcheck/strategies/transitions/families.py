"""Hypothesis strategies of actions, grouped by what they change (one family per kind of transition).

Every family also draws plain forwards at the same or other sizes (``Step`` is the state
machine's own rule): a family's sequences then mix its changes with the calls that must notice
them, and a deviation names the kind of transition it is about.
"""
from __future__ import annotations

from hypothesis import strategies as st

from ortcheck.strategies.transitions.actions import (
    Forward, MoveTo, SetAttribute, SetMode, SetRequiresGrad, SetTrainable,
)
from ortcheck.strategies.transitions.subject import PARAMETERS

PLAIN_FORWARDS = st.builds(Forward, sizes=st.sampled_from(["same", "other"]))

CHANGES = {
    "sizes": None,
    "structure": st.one_of(st.builds(Forward, rank=st.sampled_from([2, 3])),
                           st.builds(Forward, dtype=st.sampled_from(["float32", "float16"])),
                           st.builds(Forward, with_y=st.booleans())),
    "bool_values": st.builds(Forward, flag=st.booleans()),
    "str_values": st.builds(Forward, reduction=st.sampled_from(["none", "sum", "mean"])),
    "int_values": st.builds(Forward, repeats=st.integers(0, 2)),
    "requires_grad": st.builds(SetRequiresGrad, input=st.sampled_from(["x", "y"]), value=st.booleans()),
    "frozen_params": st.builds(SetTrainable, param=st.sampled_from(PARAMETERS), value=st.booleans()),
    "attributes": st.builds(SetAttribute, value=st.sampled_from([0.5, 1.0, 2.0])),
    "modes": st.builds(SetMode, training=st.booleans()),
    "no_grad": st.builds(Forward, sizes=st.sampled_from(["same", "other"]), no_grad=st.just(True)),
    "device": st.builds(MoveTo, device=st.sampled_from(["cpu", "cuda"])),
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
