"""What a user does to a wrapped module, as values: actions, and strategies of them by family.

Running them is :mod:`ortcheck.stateful`'s job.
"""
from ortcheck.strategies.transitions.actions import (
    ACTIONS, Forward, MoveTo, SetAttribute, SetMemoryOptimizer, SetMode, SetRequiresGrad, SetTrainable, Step,
)
from ortcheck.strategies.transitions.families import EXAMPLES, FAMILIES, GPU_FAMILIES, family_actions, family_examples

__all__ = ["ACTIONS", "EXAMPLES", "FAMILIES", "GPU_FAMILIES", "Forward", "MoveTo", "SetAttribute", "SetMemoryOptimizer", "SetMode",
           "SetRequiresGrad", "SetTrainable", "Step", "family_actions", "family_examples"]
