"""Re-export transitions as a state machine: actions, the module they drive, the contract's
prediction of the counters, and a checked runner that replays any sequence.

A failing sequence prints as a script using :func:`replay`, e.g.::

    replay(impls.get("reference"), Options(), [Forward(), SetMode(training=False), Forward(), Step()])
"""
from ortcheck.strategies.transitions.actions import (
    ACTIONS, Forward, MoveTo, SetAttribute, SetMode, SetRequiresGrad, SetTrainable, Step,
)
from ortcheck.strategies.transitions.families import FAMILIES, GPU_FAMILIES, family_actions
from ortcheck.strategies.transitions.prediction import Prediction
from ortcheck.strategies.transitions.scenario import Scenario, replay
from ortcheck.strategies.transitions.subject import TransitionSubject

__all__ = ["ACTIONS", "FAMILIES", "GPU_FAMILIES", "Forward", "MoveTo", "Prediction", "Scenario", "SetAttribute",
           "SetMode", "SetRequiresGrad", "SetTrainable", "Step", "TransitionSubject", "family_actions", "replay"]
