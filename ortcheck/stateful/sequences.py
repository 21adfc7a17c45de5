"""The transition property's engine: a hypothesis state machine drawing one family's action
sequences for an implementation, each run through a :class:`Scenario`, and the settings it runs
under. ``suites/test_transitions.py`` checks each family with it; ``bench/shrink_time.py`` times
how long its failures take to shrink."""
from __future__ import annotations

from hypothesis import note, settings
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

from ortcheck.profiles import costly
from ortcheck.stateful.scenario import Scenario
from ortcheck.strategies.transitions import family_actions, family_examples
from ortcheck.strategies.transitions.actions import Step

STEPS = 20
# Share of the profile's examples (ci: 100): mixed runs 50 sequences, each single family 20.
SHARE = {"mixed": 0.5}
DEFAULT_SHARE = 0.2


def sequence_settings(family: str) -> settings:
    """The family's share of examples. A failure shrinks to one reproduction and stops there: no
    hunt for further distinct bugs, no explain phase (each replays costly exports), so shrinking
    ends within a minute on 2 cores (bench/shrink_time.py)."""
    return settings(costly(SHARE.get(family, DEFAULT_SHARE)), stateful_step_count=STEPS)


def state_machine(impl, options, family: str) -> type[RuleBasedStateMachine]:
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


def run_canonical(impl, options, family: str) -> None:
    """The family's canonical sequences, each from a fresh module (as hypothesis runs ``@example`` s)."""
    for actions in family_examples(family, options.device):
        scenario = Scenario(impl, options)
        try:
            for action in actions:
                scenario.apply(action)
        except BaseException as error:
            error.add_note("Reproduction (a canonical sequence of the family):\n" + scenario.reproduction())
            raise


def check_family(impl, options, family: str) -> None:
    """The family's canonical sequences, then the drawn ones."""
    run_canonical(impl, options, family)
    run_state_machine_as_test(state_machine(impl, options, family), settings=sequence_settings(family))
