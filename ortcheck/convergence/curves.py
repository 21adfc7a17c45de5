"""Per-step training metrics: what the runner records and the gates, goldens and plots consume."""
from __future__ import annotations

import dataclasses
import math

METRICS = ("loss", "grad_norm", "lr")


@dataclasses.dataclass
class Curve:
    """One training run: per-step ``loss``, ``grad_norm`` (before clipping) and ``lr`` (used by the step).

    ``fallback_steps`` lists the steps during which the implementation reported running in eager
    PyTorch instead of its own pipeline (a parity that proves nothing about the pipeline);
    ``skipped_steps`` those a GradScaler skipped because a scaled gradient overflowed.
    """

    seed: int
    metrics: dict[str, list[float]]
    fallback_steps: list[int] = dataclasses.field(default_factory=list)
    skipped_steps: list[int] = dataclasses.field(default_factory=list)

    @property
    def steps(self) -> int:
        return len(self.metrics.get("loss", []))

    def to_json(self) -> dict:
        return {"seed": self.seed, **{name: list(values) for name, values in self.metrics.items()},
                "fallback_steps": list(self.fallback_steps), "skipped_steps": list(self.skipped_steps)}

    @classmethod
    def from_json(cls, data: dict) -> "Curve":
        return cls(data["seed"], {name: [float(v) for v in data[name]] for name in METRICS},
                   list(data.get("fallback_steps", [])), list(data.get("skipped_steps", [])))


@dataclasses.dataclass
class CaseRun:
    """All seeds of one case under one implementation, with what it ran on."""

    case: str
    impl: str
    device: str
    curves: list[Curve]
    determinism: dict
    fingerprint: dict
    seconds: float = 0.0

    def mean(self, metric: str) -> list[float]:
        """Per-step mean over seeds (the curve itself when there is one seed)."""
        columns = zip(*(curve.metrics[metric] for curve in self.curves))
        return [math.fsum(column) / len(self.curves) for column in columns]
