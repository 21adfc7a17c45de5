"""The transition machine alone: each change maps to the cheapest sufficient rebuild, with a reason;
each mode keeps its own graph; no_grad forwards never rebuild gradients."""
import dataclasses

import pytest
import torch

from reference.nested_io import flatten
from reference.transitions import REASONS, GraphState, Graphs, Transition, decide
from reference.transitions.state_machine import (AUTOCAST_CHANGED, FIRST_FORWARD, MEMORY_OPTIONS_CHANGED, MODE_CHANGED, MODULE_CHANGED, REUSE, REUSED, LENGTH_CHANGED, DATA_CHANGED, SIZE_READ_CHANGED, SCHEMA_CHANGED, SIZES_CHANGED,
                                           TRAINABLE_CHANGED, UNIT_AXES_CHANGED, unit_axes)


def state(data=(torch.zeros(2, 3),), training=True, device="cpu", inputs_grad=(True,), trainable=(True, True)):
    return GraphState(flatten(data)[1], training, device, inputs_grad, trainable)


BASE = state()


def test_first_forward_exports_and_builds():
    transition = decide(None, BASE)
    assert (transition.export, transition.build_gradient, transition.reason) == (True, True, "first forward")


def test_other_sizes_are_a_reuse():
    transition = decide(BASE, state(data=(torch.zeros(7, 3),)))
    assert not transition.new_sessions and transition.reason.startswith("reuse")


@pytest.mark.parametrize("before, after, reason", [
    ((1, 3), (4, 3), UNIT_AXES_CHANGED), ((4, 3), (1, 3), UNIT_AXES_CHANGED), ((4, 1), (2, 3), UNIT_AXES_CHANGED),
    ((4, 3), (7, 5), REUSED), ((1, 3), (1, 5), REUSED)])
def test_only_a_change_in_the_axes_of_size_1_re_exports_for_sizes(before, after, reason):
    """A trace may specialize an axis of size 1 (reference.export.exporter); other sizes are dynamic."""
    keyed = [dataclasses.replace(BASE, unit_axes=unit_axes([torch.zeros(size)])) for size in (before, after)]
    assert decide(*keyed).reason == reason


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


def test_an_attribute_set_through_the_wrapper_forces_a_reexport():
    changed = dataclasses.replace(BASE, module_version=1)
    assert decide(BASE, changed) == Transition(True, True, MODULE_CHANGED)


def test_under_no_grad_gradient_needs_are_not_compared():
    changed = state(inputs_grad=(False,), trainable=(False, False))
    assert decide(BASE, changed, grad_enabled=False) == REUSE
    assert decide(BASE, state(data=(torch.zeros(2, 3, 1),)), grad_enabled=False).export


def test_each_mode_keeps_its_own_graph():
    eval_state = state(training=False)
    steps = [(BASE, FIRST_FORWARD), (eval_state, MODE_CHANGED), (BASE, REUSED), (eval_state, REUSED)]
    graphs = Graphs()
    for current, reason in steps:
        transition, graphs = graphs.step(current)
        assert transition.reason == reason
    assert (graphs.train, graphs.eval) == (BASE, eval_state)


def test_a_change_invalidates_the_other_modes_graph_too():
    graphs = Graphs()
    for current in (BASE, state(training=False), state(data=(torch.zeros(2, 3, 1),))):
        _, graphs = graphs.step(current)
    transition, _ = graphs.step(state(data=(torch.zeros(2, 3, 1),), training=False))
    assert (transition.export, transition.reason) == (True, SCHEMA_CHANGED)


def test_a_no_grad_reuse_keeps_what_the_graph_was_built_for():
    _, graphs = Graphs().step(BASE)
    frozen = state(trainable=(False, False))
    transition, after_no_grad = graphs.step(frozen, grad_enabled=False)
    assert transition == REUSE and after_no_grad.train == BASE
    transition, _ = after_no_grad.step(frozen)  # with grad on, the frozen parameters now matter
    assert transition == Transition(False, True, TRAINABLE_CHANGED)


def test_a_first_forward_under_no_grad_builds_for_the_declared_needs():
    transition, graphs = Graphs().step(BASE, grad_enabled=False)
    assert transition == Transition(True, True, FIRST_FORWARD)
    assert graphs.step(BASE)[0] == REUSE


def test_every_reason_is_in_the_vocabulary():
    seen = {decide(None, BASE).reason, decide(BASE, BASE).reason, Graphs(train=BASE).step(state(training=False))[0].reason}
    seen |= {decide(BASE, changed).reason for changed in (
        state(data=(torch.zeros(2, 3, 1),)), state(training=False), state(device="cuda"),
        dataclasses.replace(BASE, module_version=1), state(inputs_grad=(False,)), state(trainable=(False, True)),
        dataclasses.replace(BASE, memory_options=(1, ())), dataclasses.replace(BASE, sizes=((3, 3),)),
        dataclasses.replace(BASE, guard_values=((2, 1),)), dataclasses.replace(BASE, unit_axes=((0,),)),
        dataclasses.replace(BASE, autocast=(torch.float16,)))}
    guarded = dataclasses.replace(BASE, guard_values=((1, 2), (1,), (5,)), guard_kinds=("value", "size", "length"))
    seen |= {decide(guarded, dataclasses.replace(guarded, guard_values=values)).reason
             for values in (((1, 2), (1,), (6,)), ((1, 2), (0,), (5,)))}
    assert seen == set(REASONS)


def test_a_call_records_the_autocast_region_of_its_device():
    """A trace bakes in autocast's casts: entering, switching or leaving autocast re-exports."""
    tensors = (torch.zeros(2, 3),)
    calls = []
    for region in (torch.autocast("cpu", enabled=False), torch.autocast("cpu", dtype=torch.bfloat16),
                   torch.autocast("cpu", dtype=torch.float16)):
        with region:
            calls.append(GraphState.of_call(torch.nn.Linear(3, 2), tensors, flatten(tensors)[1], "cpu"))
    assert [c.autocast for c in calls] == [(), (torch.bfloat16,), (torch.float16,)]
    assert [decide(a, b).reason for a, b in zip(calls, calls[1:])] == [AUTOCAST_CHANGED] * 2


def test_the_reason_names_the_kind_of_the_first_guard_that_changed():
    guarded = dataclasses.replace(BASE, guard_values=((1, 2), (1,), (5,)), guard_kinds=("value", "size", "length"))
    def reason(*values):
        return decide(guarded, dataclasses.replace(guarded, guard_values=values)).reason
    assert reason((1, 2), (1,), (6,)) == LENGTH_CHANGED
    assert reason((1, 2), (0,), (6,)) == SIZE_READ_CHANGED
    assert reason((1, 3), (0,), (6,)) == DATA_CHANGED
    assert decide(guarded, dataclasses.replace(guarded, guard_values="the guard graph failed")).reason == DATA_CHANGED
    assert decide(guarded, guarded) == REUSE


def test_a_graph_returning_python_values_follows_the_input_sizes():
    """Its Python outputs were frozen at export and may depend on the sizes: new sizes re-export,
    the same sizes reuse, and a graph without them keeps ignoring sizes."""
    keyed = dataclasses.replace(BASE, sizes=((2, 3),))
    assert decide(keyed, dataclasses.replace(BASE, sizes=((4, 3),))) == Transition(True, True, SIZES_CHANGED)
    assert decide(keyed, keyed) == REUSE
    assert decide(BASE, state(data=(torch.zeros(4, 3),))) == REUSE


def test_changed_memory_optimizer_options_rebuild_gradients_only_and_not_under_no_grad():
    recompute = dataclasses.replace(BASE, memory_options=(1, ()))
    assert decide(BASE, recompute) == Transition(False, True, MEMORY_OPTIONS_CHANGED)
    assert decide(BASE, recompute, grad_enabled=False) == REUSE
