"""The implementation contract every suite is written against (docs/architecture.md, "The contract").

An implementation is anything that can wrap a ``torch.nn.Module`` so it trains through an
ORTModule-style pipeline. Suites never import an implementation directly: they receive one from
the ``impl`` fixture and talk to it only through :class:`Implementation`.
"""
from __future__ import annotations

import abc
import dataclasses
from pathlib import Path
from typing import Any, Collection, Sequence

import torch

FALLBACK_POLICIES = ("disable", "auto")
DEVICES = ("cpu", "cuda")


class UnsupportedOptionError(ValueError):
    """An implementation was asked for an option it does not implement (rather than ignoring it)."""


@dataclasses.dataclass(frozen=True)
class Options:
    """How to wrap a module, validated here: front ends turn the ``ValueError`` into their own usage
    error (or offer :data:`DEVICES` as choices), never check a value again. Each implementation maps
    these to its own knobs and refuses the rest (:meth:`refuse_unmapped`)."""

    memory_opt_level: int = 0
    memory_opt_config: tuple[str, ...] = ()
    mem_efficient_grad: bool = False
    fallback: str = "disable"  # "disable": export/gradient failures raise; "auto": warn, run eager
    device: str = "cpu"
    skip_checks: bool = False  # ortmodule only: keep its default skip-check policy (stop re-checking)

    def __post_init__(self):
        if self.fallback not in FALLBACK_POLICIES:
            raise ValueError(f"unknown fallback policy {self.fallback!r}; valid: {', '.join(FALLBACK_POLICIES)}")
        if self.device not in DEVICES:
            raise ValueError(f"unknown device {self.device!r}; valid: {', '.join(DEVICES)}")
        if self.memory_opt_level not in (0, 1, 2):
            raise ValueError(f"memory_opt_level must be 0, 1 or 2, got {self.memory_opt_level!r}")

    def refuse_unmapped(self, mapped: Collection[str], pipeline: str) -> None:
        """Refuse by name every option off its default that ``pipeline`` does not map (``mapped``):
        a property checked under an option silently ignored would report a pass for something
        never run. A field added here is thereby refused until an adapter maps it."""
        unsupported = [f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)
                       if f.name not in mapped and getattr(self, f.name) != f.default]
        if unsupported:
            raise UnsupportedOptionError(f"{pipeline} does not implement Options({', '.join(unsupported)}); "
                                         f"it implements: {', '.join(mapped)}")


@dataclasses.dataclass
class Observations:
    """Counters an implementation exposes about what it did so far (None: not observable)."""

    exports: int | None = 0
    gradient_builds: int | None = 0
    sessions: int | None = 0  # times it (re)created the session(s) of a graph, however many it holds
    fallbacks: int | None = 0
    last_reason: str | None = None


@dataclasses.dataclass(frozen=True)
class MemoryPlan:
    """One plan of an implementation's memory optimizer, as its own report states it."""

    name: str             # op types in topological order, each followed by "+"
    strategy: int         # 1 recompute, 2 recompute with compromise
    enabled: bool         # ON in the report
    freq: int             # occurrences in the graph
    applied: int | None   # occurrences applied (None: not reported)
    saving_bytes: int | None  # all occurrences, on the first batch's sizes
    saving_symbolic: str | None


@dataclasses.dataclass(frozen=True)
class MemoryPlans:
    """An implementation's memory-optimizer report for the training graph of a wrapped module."""

    plans: tuple[MemoryPlan, ...]
    table: str                          # the report as the implementation prints it
    applied_saving_bytes: int | None = None  # bytes the applied occurrences stop stashing (first batch)
    kept_leaf_bytes: int | None = None       # bytes the applied plans stash in their place
    layer_inputs: tuple[str, ...] | None = None  # values level 1 keeps stashed as layer boundaries

    def plan(self, name: str, strategy: int = 1) -> MemoryPlan | None:
        return next((p for p in self.plans if p.name == name and p.strategy == strategy), None)


class Capability:
    """Names of the properties an implementation can be checked for."""

    IO_ROUNDTRIP = "io.roundtrip"
    IO_SCHEMA = "io.schema"
    IO_THROUGH_MODULE = "io.through_module"
    TRAINS = "trains"  # forward and backward through the wrapped module: every property that trains one needs it
    TRANSITIONS = "transitions"
    RECOMPUTE = "recompute"
    # Stashed activations are tensors torch saves for backward (save_for_backward), so what a step
    # keeps can be measured from outside (ortcheck.checks.kept); ORTModule keeps them inside onnxruntime.
    KEPT_TENSORS_VISIBLE = "recompute.kept_tensors_visible"
    MEM_EFFICIENT_GRAD = "mem_efficient_grad"
    BNB4 = "bnb4"
    CONVERGENCE = "convergence"
    SKIP_CHECKS = "skip_checks"  # has a fast path that stops re-checking after the first forward (Options.skip_checks)


class Implementation(abc.ABC):
    """One ORTModule-style pipeline behind the contract."""

    name: str = ""
    CAPABILITIES: frozenset[str] = frozenset()  # the Capability names of the properties it is checked for

    def unavailable_reason(self) -> str | None:
        """None when this implementation can run in the current environment, else a one-line reason."""
        return None

    def capabilities(self) -> frozenset[str]:
        """The :class:`Capability` names this implementation supports: :attr:`CAPABILITIES`, its one declaration."""
        return self.CAPABILITIES

    @abc.abstractmethod
    def wrap(self, module: torch.nn.Module, options: Options = Options()) -> torch.nn.Module:
        """Return a module that computes what ``module`` computes, through the pipeline."""

    @abc.abstractmethod
    def flatten(self, data: Any) -> tuple[list[torch.Tensor], Any]:
        """Split a nested structure into its tensors (in a fixed order) and a schema."""

    @abc.abstractmethod
    def unflatten(self, tensors: Sequence[torch.Tensor], schema: Any) -> Any:
        """Rebuild the nested structure from tensors and the schema ``flatten`` returned."""

    def reconfigure(self, wrapped: torch.nn.Module, options: Options) -> None:
        """Change the options of an already wrapped module (the memory optimizer's), from its next
        forward on, as a user of this pipeline would. Default: refused."""
        raise UnsupportedOptionError(f"{self.name} cannot change the options of a wrapped module")

    def refusal_errors(self) -> tuple[type[BaseException], ...]:
        """The error types the pipeline raises when it refuses, on purpose, something it cannot
        honour (a hook, a custom autograd.Function): suites accept a refusal only as one of these,
        and only where the contract allows one. Default: none, the pipeline refuses nothing."""
        return ()

    def same_schema(self, a: Any, b: Any) -> bool:
        """Whether two schemas would let one exported graph serve both inputs."""
        return a == b

    def observe(self, wrapped: torch.nn.Module) -> Observations:
        """Counters of what the pipeline did for ``wrapped`` so far (default: none observable)."""
        return Observations(exports=None, gradient_builds=None, sessions=None, fallbacks=None)

    def memory_plans(self, wrapped: torch.nn.Module) -> MemoryPlans | None:
        """The memory optimizer's report after a training forward (None: not observable)."""
        return None

    def bnb4_block_sizes(self) -> tuple[int, ...] | None:
        """The 4-bit block sizes the pipeline computes with (the 4-bit suites draw from these);
        None: every size the strategies draw (16-4096)."""
        return None

    def kernels(self, module: torch.nn.Module, device: str) -> str | None:
        """Which of its own kernels the pipeline picks for ``module`` on this machine, where that
        choice follows something the stack fingerprint doesn't name (a CPU flag, a library's own
        dispatch). Golden curves record it; one recorded with other kernels doesn't block. None:
        nothing of that kind."""
        return None

    def manifest_path(self) -> Path:
        """Where this implementation's expected-failure manifest lives (TOML, see ortcheck.findings.manifest)."""
        return Path(__file__).parent / "manifests" / f"{self.name}.toml"

    def __repr__(self) -> str:
        return f"<impl {self.name}>"
