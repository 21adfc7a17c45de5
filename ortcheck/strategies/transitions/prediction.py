"""The counters a correct pipeline shows, predicted by the reference transition machine.

The prediction sees only what a user sees (inputs, mode, requires_grad flags, attribute sets,
device), turns it into the contract's :class:`reference.transitions.GraphState` (schema as
``reference.io`` defines it: structure, Python values, dtype and rank, never sizes) and counts
what :class:`reference.transitions.Graphs` says must be rebuilt: one session set per rebuild.
"""
from __future__ import annotations

import dataclasses

import torch

from ortcheck.impls.base import Observations
from reference import io
from reference.transitions import GraphState, Graphs

COUNTERS = ("exports", "gradient_builds", "sessions", "fallbacks")


class Prediction:
    def __init__(self, graphs: Graphs | None = None):
        self.graphs = graphs if graphs is not None else Graphs()
        self.observations = Observations(last_reason=None)
        self.module_version = 0

    def forward(self, args: tuple, kwargs: dict, module: torch.nn.Module, device: str, grad_enabled: bool) -> None:
        tensors, schema = io.flatten((args, kwargs))
        state = GraphState.of_call(module, tensors, schema, device, self.module_version)
        transition, self.graphs = self.graphs.step(state, grad_enabled)
        self.observations = dataclasses.replace(
            self.observations,
            exports=self.observations.exports + transition.export,
            gradient_builds=self.observations.gradient_builds + transition.build_gradient,
            sessions=self.observations.sessions + transition.new_sessions,
            last_reason=transition.reason,
        )

    def attribute_set(self) -> None:
        self.module_version += 1

    def mismatches(self, observed: Observations) -> list[str]:
        """One line per observable counter that differs (None in ``observed``: not observable, skipped)."""
        lines = []
        for name in (*COUNTERS, "last_reason"):
            seen, expected = getattr(observed, name), getattr(self.observations, name)
            if seen is not None and seen != expected:
                lines.append(f"{name}: observed {seen!r}, the transition contract predicts {expected!r}")
        return lines
