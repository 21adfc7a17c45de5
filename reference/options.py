"""What a user can ask of the reference pipeline, and what it counts while it works.

The pipeline's own vocabulary, so it runs without the harness: ``ortcheck.impls.reference`` maps
the harness's options onto these and the counters back (docs/architecture.md, "The contract").
Options grow with the stages that implement them; nothing here is accepted and then ignored.
"""
from __future__ import annotations

import dataclasses
import os

from reference.recompute import LEVELS
from reference.recompute.config import Entry
from reference.recompute.config import load as load_recompute_config

FALLBACK_POLICIES = ("disable", "auto")
DEVICES = ("cpu", "cuda")
# The options that shape the gradient graphs, not the export: a change rebuilds them alone
# ("memory optimizer options changed", reference.transitions).
MEMORY_OPTIONS = ("memory_opt_level", "memory_opt_config", "mem_efficient_grad")


@dataclasses.dataclass(frozen=True)
class Options:
    """``fallback="auto"``: an export or gradient-build failure warns, counts and runs eager PyTorch;
    ``"disable"``: it raises. ``device``: where the module and the sessions live.
    ``memory_opt_level`` / ``memory_opt_config``: the recompute stage (``reference.recompute``); the
    config is a sequence of ``"<plan>:<strategy>:<count>"`` entries or the path of a JSON list, parsed
    here, once, into ``memory_opt_entries`` (which the stages read): a malformed entry or an
    unreadable file fails at construction, not mid-training.
    ``mem_efficient_grad``: hand each parameter's gradient to torch as soon as the backward graph
    completes it, instead of all at the end (``reference.grads``)."""

    fallback: str = "disable"
    device: str = "cpu"
    memory_opt_level: int = 0
    memory_opt_config: tuple[str, ...] | str | os.PathLike = ()
    mem_efficient_grad: bool = False
    memory_opt_entries: tuple[Entry, ...] = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if self.fallback not in FALLBACK_POLICIES:
            raise ValueError(f"unknown fallback policy {self.fallback!r}; valid: {', '.join(FALLBACK_POLICIES)}")
        if self.device not in DEVICES:
            raise ValueError(f"unknown device {self.device!r}; valid: {', '.join(DEVICES)}")
        if self.memory_opt_level not in LEVELS:
            valid = f"{', '.join(map(str, LEVELS[:-1]))} or {LEVELS[-1]}"
            raise ValueError(f"memory_opt_level must be {valid}, got {self.memory_opt_level!r}")
        if not isinstance(self.memory_opt_config, (str, os.PathLike)):
            object.__setattr__(self, "memory_opt_config", tuple(self.memory_opt_config))
        object.__setattr__(self, "memory_opt_entries", load_recompute_config(self.memory_opt_config))

    @property
    def memory_options(self) -> tuple:
        """The values of :data:`MEMORY_OPTIONS`, which the transition machine compares."""
        return tuple(getattr(self, name) for name in MEMORY_OPTIONS)

    @property
    def recomputes(self) -> bool:
        return self.memory_opt_level > 0 or bool(self.memory_opt_config)


@dataclasses.dataclass
class Counters:
    """How often the wrapper exported, built gradients and created sessions, fell back to eager,
    and why it did what it did on the last forward (a reason from ``reference.transitions.REASONS``)."""

    exports: int = 0
    gradient_builds: int = 0
    sessions: int = 0
    fallbacks: int = 0
    last_reason: str | None = None
