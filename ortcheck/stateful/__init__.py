"""Stateful checks: action sequences run against an implementation and judged after every action.

Hypothesis' ``stateful`` drives them (suites/test_transitions.py); strategies of the actions live in
:mod:`ortcheck.strategies.transitions`. A failing sequence prints as a script using :func:`replay`::

    from ortcheck import impls
    from ortcheck.impls import Options
    from ortcheck.stateful import replay, Forward, SetMode, Step

    replay(impls.get("reference"), Options(), [Forward(), SetMode(training=False), Forward(), Step()])
"""
from ortcheck.stateful.contract import Call, Contract
from ortcheck.stateful.scenario import Scenario, replay
from ortcheck.strategies.transitions.actions import (
    ACTIONS, Forward, MoveTo, SetAttribute, SetMemoryOptimizer, SetMode, SetRequiresGrad, SetTrainable, Step,
)

__all__ = ["ACTIONS", "Call", "Contract", "Forward", "MoveTo", "Scenario", "SetAttribute", "SetMemoryOptimizer", "SetMode",
           "SetRequiresGrad", "SetTrainable", "Step", "replay"]
