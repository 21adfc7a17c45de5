"""The transition machine alone: each change maps to the cheapest sufficient rebuild, with a reason."""
import dataclasses

import pytest
import torch

from reference.io import flatten
from reference.transitions import GraphState, decide


def state(data=(torch.zeros(2, 3),), training=True, device="cpu", inputs_grad=(True,), trainable=(True, True)):
    return GraphState(flatten(data)[1], training, device, inputs_grad, trainable)


BASE = state()


def test_first_forward_exports_and_builds():
    transition = decide(None, BASE)
    assert (transition.export, transition.build_gradient, transition.reason) == (True, True, "first forward")


def test_other_sizes_are_a_reuse():
    transition = decide(BASE, state(data=(torch.zeros(7, 3),)))
    assert not transition.new_sessions and transition.reason.startswith("reuse")


@pytest.mark.parametrize("changed, reason", [
    (state(data=(torch.zeros(2, 3, 1),)), "input schema changed"),
    (state(data=(torch.zeros(2, 3, dtype=torch.float64),)), "input schema changed"),
    (state(data=(torch.zeros(2, 3), 1)), "input schema changed"),
    (state(training=False), "train/eval mode changed"),
    (state(device="cuda"), "device changed"),
])
def test_what_the_graph_bakes_in_forces_a_reexport(changed, reason):
    transition = decide(BASE, changed)
    assert (transition.export, transition.build_gradient, transition.reason) == (True, True, reason)


@pytest.mark.parametrize("changed, reason", [
    (state(inputs_grad=(False,)), "inputs requiring grad changed"),
    (state(trainable=(True, False)), "trainable parameters changed"),
])
def test_gradient_needs_rebuild_the_gradient_graph_only(changed, reason):
    transition = decide(BASE, changed)
    assert (transition.export, transition.build_gradient, transition.reason) == (False, True, reason)


def test_the_most_expensive_change_names_the_reason():
    both = dataclasses.replace(state(training=False), trainable=(False, False))
    assert decide(BASE, both).reason == "train/eval mode changed"
