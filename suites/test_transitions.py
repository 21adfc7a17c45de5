"""Property: across any sequence of user actions, a wrapped module computes what eager computes, and
re-exports, rebuilds gradients and creates sessions exactly when the transition contract says.

A hypothesis state machine draws sequences of up to 20 actions (forwards at the same or other
sizes, with changed structure or bool/str/int values, under no_grad; requires_grad flips;
frozen/unfrozen parameters; attributes set on the wrapper; train/eval; backward + SGD step;
device moves on cuda). After every action, outputs, gradients and updated parameters pass the
float64 oracle and the observable counters equal what the transition contract
(``ortcheck.stateful.contract``, independent of every implementation) predicts. One test per family
of actions, so a deviation names the kind of transition it is about; ``mixed`` interleaves them
all. Each family's canonical sequences run first on every run, then the drawn ones; a failing drawn
sequence shrinks and prints a standalone ``replay(...)`` script.

The contract: re-export exactly when the traced graph would differ (schema, mode, device, an
attribute set through the wrapper; never for sizes alone), rebuild gradients exactly when the
inputs/parameters needing grad change (not under no_grad), one graph cached per mode.
"""
import dataclasses

import pytest
from hypothesis import note, settings
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

from ortcheck.impls import Capability
from ortcheck.profiles import costly
from ortcheck.pytest_plugin import not_applicable
from ortcheck.stateful import Forward, Scenario, Step, replay
from ortcheck.strategies.transitions import FAMILIES, GPU_FAMILIES, family_actions, family_examples

pytestmark = pytest.mark.requires(Capability.TRANSITIONS)

STEPS = 20
FAMILY_PARAMS = [pytest.param(f, marks=pytest.mark.gpu) if f in GPU_FAMILIES else f for f in FAMILIES]
# Share of the profile's examples (ci: 100): mixed runs 50 sequences, each single family 20.
SHARE = {"mixed": 0.5}
DEFAULT_SHARE = 0.2


def sequences(family: str) -> settings:
    """The family's share of examples. A failure shrinks to one reproduction and stops there: no
    hunt for further distinct bugs, no explain phase (each replays costly exports), so shrinking
    ends within a minute on 2 cores (bench/shrink_time.py)."""
    return settings(costly(SHARE.get(family, DEFAULT_SHARE)), stateful_step_count=STEPS)


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


def run_examples(impl, options, family):
    """The family's canonical sequences, each from a fresh module (as hypothesis runs ``@example`` s)."""
    for actions in family_examples(family, options.device):
        scenario = Scenario(impl, options)
        try:
            for action in actions:
                scenario.apply(action)
        except BaseException as error:
            error.add_note("Reproduction (a canonical sequence of the family):\n" + scenario.reproduction())
            raise


@pytest.mark.parametrize("family", FAMILY_PARAMS)
def test_transitions(impl, options, family):
    run_examples(impl, options, family)
    run_state_machine_as_test(machine(impl, options, family), settings=sequences(family))


@pytest.mark.requires(Capability.SKIP_CHECKS)
@pytest.mark.parametrize("family", FAMILY_PARAMS)
def test_transitions_with_default_skip_checks(impl, options, family):
    """The same property under the implementation's skip-check fast path (ORTModule's default policy)."""
    fast_path = dataclasses.replace(options, skip_checks=True)
    run_examples(impl, fast_path, family)
    run_state_machine_as_test(machine(impl, fast_path, family), settings=sequences(family))


def test_counters_are_observable(impl, options):
    """Says in the report whether the sequences could check counters, or outputs and gradients only."""
    scenario = replay(impl, options, [Forward(), Step(), Forward(sizes="other")])
    observed = impl.observe(scenario.wrapped)
    if observed.exports is None and observed.gradient_builds is None and observed.sessions is None:
        not_applicable(f"{impl.name} exposes no transition counters: its sequences check outputs and gradients only")
    assert (observed.exports, observed.gradient_builds, observed.sessions) == (1, 1, 1)
