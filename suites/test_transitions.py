"""Property: across any sequence of user actions, a wrapped module computes what eager computes, and
re-exports, rebuilds gradients and creates sessions exactly when the transition contract says.

A hypothesis state machine draws sequences of up to 20 actions (forwards at the same or other
sizes, with changed structure or bool/str/int values, under no_grad; requires_grad flips;
frozen/unfrozen parameters; attributes set on the wrapper; train/eval; backward + SGD step;
device moves on cuda). After every action, outputs, gradients and updated parameters equal
eager's and the observable counters equal ``reference.transitions``' prediction. One test per
family of actions, so a deviation names the kind of transition it is about; ``mixed`` interleaves
them all. A failing sequence shrinks and prints a standalone ``replay(...)`` script.

The contract: re-export exactly when the traced graph would differ (schema, mode, device, an
attribute set through the wrapper; never for sizes alone), rebuild gradients exactly when the
inputs/parameters needing grad change (not under no_grad), one graph cached per mode.
"""
import dataclasses

import pytest
from hypothesis import note, settings
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

from ortcheck.impls import Capability
from ortcheck.strategies.transitions import FAMILIES, GPU_FAMILIES, Forward, Scenario, Step, family_actions, replay

pytestmark = pytest.mark.requires(Capability.TRANSITIONS)

STEPS = 20
FAMILY_PARAMS = [pytest.param(f, marks=pytest.mark.gpu) if f in GPU_FAMILIES else f for f in FAMILIES]
# Share of the profile's examples (ci: 100): mixed runs 50 sequences, each single family 20.
SHARE = {"mixed": 0.5}
DEFAULT_SHARE = 0.2


def sequences(family: str) -> settings:
    examples = max(10, int(settings().max_examples * SHARE.get(family, DEFAULT_SHARE)))
    return settings(max_examples=examples, stateful_step_count=STEPS)


def machine(impl, options, family):
    """A state machine class over ``family``'s actions for one implementation and options."""

    class TransitionMachine(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            self.scenario = Scenario(impl, options)

        @rule(action=family_actions(family, options.device))
        def act(self, action):
            self._apply(action)

        @precondition(lambda self: self.scenario.can_step)
        @rule()
        def backward_and_step(self):
            self._apply(Step())

        def _apply(self, action):
            try:
                self.scenario.apply(action)
            except BaseException:
                note("Reproduction:\n" + self.scenario.reproduction())
                raise

    return TransitionMachine


@pytest.mark.parametrize("family", FAMILY_PARAMS)
def test_transitions(impl, options, family):
    run_state_machine_as_test(machine(impl, options, family), settings=sequences(family))


@pytest.mark.requires(Capability.SKIP_CHECKS)
@pytest.mark.parametrize("family", FAMILY_PARAMS)
def test_transitions_with_default_skip_checks(impl, options, family):
    """The same property under the implementation's skip-check fast path (ORTModule's default policy)."""
    fast_path = dataclasses.replace(options, skip_checks=True)
    run_state_machine_as_test(machine(impl, fast_path, family), settings=sequences(family))


def test_counters_are_observable(impl, options):
    """Says in the report whether the sequences could check counters, or outputs and gradients only."""
    scenario = replay(impl, options, [Forward(), Step(), Forward(sizes="other")])
    observed = impl.observe(scenario.wrapped)
    if observed.exports is None and observed.gradient_builds is None and observed.sessions is None:
        pytest.skip(f"{impl.name} exposes no transition counters: its sequences check outputs and gradients only")
    assert (observed.exports, observed.gradient_builds, observed.sessions) == (1, 1, 1)
