"""One convergence check, as the suite and the CLI run it: parity with eager, then the golden tier.

Parity (same job, same stack) always blocks. The golden comparison blocks only when the golden was
recorded on the same fingerprint with the same configuration; otherwise its result is advisory: it
is reported, never failing, because another stack legitimately computes other bits. A golden is
written only after parity passed, so a broken pipeline can't record itself as the truth.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from ortcheck.convergence import cases, determinism, golden as goldens, runner
from ortcheck.convergence.curves import CaseRun
from ortcheck.convergence.gate import GateResult, compare
from ortcheck.impls.base import Implementation, Options

GOLDEN_ROOT = Path(__file__).resolve().parents[2] / "golden"


class GoldenAdvisory(UserWarning):
    """A golden comparison that can't block (other stack or configuration). Importable, so
    pytest-xdist can carry it from a worker to the controller."""


@dataclasses.dataclass
class Outcome:
    case: cases.Case
    eager: CaseRun
    actual: CaseRun
    parity: GateResult
    golden_path: Path
    golden: goldens.Golden | None = None
    against_golden: GateResult | None = None
    blocking: bool = False
    advisory: str | None = None  # why the golden comparison does not block
    updated: bool = False

    @property
    def failures(self) -> list[str]:
        found = [f"parity with eager: {f}" for f in self.parity.failures]
        if self.blocking and self.against_golden is not None:
            found += [f"against {self.golden_path.name}: {f}" for f in self.against_golden.failures]
        return found


def check(case: cases.Case, impl: Implementation, options: Options = Options(), steps: int | None = None,
          golden_root: Path = GOLDEN_ROOT, update: bool = False) -> Outcome:
    steps = steps or case.training.steps
    eager, actual = runner.run_pair(case, impl, options, steps)
    outcome = Outcome(case, eager, actual, compare(eager, actual, case.tolerance),
                      goldens.path_for(golden_root, case.name, impl.name, options.device))
    if update:
        if outcome.parity.ok:
            goldens.write(outcome.golden_path, goldens.Golden(actual, case.config(steps), case.tolerance))
            outcome.updated = True
        return outcome
    outcome.golden = goldens.load(outcome.golden_path)
    outcome.against_golden = compare(outcome.golden.run, actual, outcome.golden.tolerance)
    outcome.advisory = _why_advisory(outcome.golden, actual, case.config(steps))
    outcome.blocking = outcome.advisory is None
    return outcome


def _why_advisory(golden: goldens.Golden, actual: CaseRun, config: dict) -> str | None:
    differences = determinism.fingerprint_differences(golden.run.fingerprint, actual.fingerprint)
    if differences:
        return "recorded on another stack (" + "; ".join(differences) + ")"
    changed = sorted(key for key in set(golden.config) | set(config) if golden.config.get(key) != config.get(key))
    if changed:
        return f"recorded with another configuration ({', '.join(changed)})"
    return None
