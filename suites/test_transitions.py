"""Property: across any sequence of user actions, a wrapped module computes what eager computes, and
re-exports, rebuilds gradients and creates sessions exactly when the transition contract says.

Checks: any sequence of up to 20 user actions (forwards at other sizes, under `torch.autocast` entered,
switched between float16 and bfloat16 or left (a re-export permitted there) or with changed
structure/bool/str/int values or a Python number (int or float) multiplied into the graph, under `no_grad`;
requires_grad flips; frozen parameters; attributes set on the wrapper; train/eval; backward + SGD step;
device moves on cuda): outputs, gradients and updated parameters after every action, and exports, gradient
builds and sessions exactly as the transition contract predicts

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

from ortcheck.impls import Capability
from ortcheck.pytest_plugin import not_applicable
from ortcheck.stateful import Forward, Step, replay
from ortcheck.stateful.sequences import check_family
from ortcheck.strategies.transitions import FAMILIES, GPU_FAMILIES

pytestmark = pytest.mark.requires(Capability.TRANSITIONS)

FAMILY_PARAMS = [pytest.param(f, marks=pytest.mark.gpu) if f in GPU_FAMILIES else f for f in FAMILIES]


@pytest.mark.parametrize("family", FAMILY_PARAMS)
def test_transitions(impl, options, family):
    check_family(impl, options, family)


@pytest.mark.requires(Capability.SKIP_CHECKS)
@pytest.mark.parametrize("family", FAMILY_PARAMS)
def test_transitions_with_default_skip_checks(impl, options, family):
    """The same property under the implementation's skip-check fast path (ORTModule's default policy)."""
    fast_path = dataclasses.replace(options, skip_checks=True)
    check_family(impl, fast_path, family)


def test_counters_are_observable(impl, options):
    """Says in the report whether the sequences could check counters, or outputs and gradients only."""
    scenario = replay(impl, options, [Forward(), Step(), Forward(sizes="other")])
    observed = impl.observe(scenario.wrapped)
    if observed.exports is None and observed.gradient_builds is None and observed.sessions is None:
        not_applicable(f"{impl.name} exposes no transition counters: its sequences check outputs and gradients only")
    assert (observed.exports, observed.gradient_builds, observed.sessions) == (1, 1, 1)
