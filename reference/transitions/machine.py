"""A pure state machine: (previous state, current state) -> what to rebuild, and why.

The export depends on what the traced graph bakes in: the input schema (structure, constants,
dtypes, ranks), train/eval mode (dropout) and device. The gradient graph depends on which graph
inputs need gradients. Sessions follow from either. Checking in this order makes the reason name
the most expensive change.
"""
from __future__ import annotations

import dataclasses

from reference.io import Schema


@dataclasses.dataclass(frozen=True)
class GraphState:
    schema: Schema
    training: bool
    device: str
    inputs_requiring_grad: tuple[bool, ...]  # per flattened user tensor (False under no_grad)
    trainable: tuple[bool, ...]              # per module parameter, named_parameters() order


@dataclasses.dataclass(frozen=True)
class Transition:
    export: bool
    build_gradient: bool
    reason: str

    @property
    def new_sessions(self) -> bool:
        return self.export or self.build_gradient


REUSE = Transition(False, False, "reuse: nothing changed")


def decide(previous: GraphState | None, current: GraphState) -> Transition:
    if previous is None:
        return Transition(True, True, "first forward")
    for field, what in (("schema", "input schema changed"), ("training", "train/eval mode changed"),
                        ("device", "device changed")):
        if getattr(previous, field) != getattr(current, field):
            return Transition(True, True, what)
    if previous.inputs_requiring_grad != current.inputs_requiring_grad:
        return Transition(False, True, "inputs requiring grad changed")
    if previous.trainable != current.trainable:
        return Transition(False, True, "trainable parameters changed")
    return REUSE
