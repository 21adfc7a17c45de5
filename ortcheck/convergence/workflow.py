"""One convergence check, as the suite and the CLI run it: parity with eager, then the golden tier.

Parity (same job, same stack) always blocks. The golden comparison blocks wherever it means
something: on the stack the golden was recorded on ("same stack"), and on stacks that differ only
in what the tolerance model covers (:data:`COVERED`: the CPU's kernel dispatch level, thread and
core counts; measured in docs/architecture.md, "Golden tiers"). Where the libraries, device, dtype
or machine differ (on cuda also the GPU model, its architecture, the CUDA and cuDNN versions and
torch's TF32 and determinism flags), or the case's configuration or determinism settings changed,
another stack legitimately computes another curve: the comparison is advisory (reported, never
failing). A golden is written only after parity passed, so a broken pipeline can't record itself
as the truth. A missing or damaged golden never hides the parity verdict: the failures say first
whether the run matched eager, then what is wrong with the golden and the command that records it.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from ortcheck.convergence import cases, determinism, golden as goldens, runner
from ortcheck.convergence.curves import CaseRun
from ortcheck.convergence.gate import GateResult, compare, oracle_parity
from ortcheck.convergence.tolerance import CurveTolerance
from ortcheck.impls.base import Implementation, Options

GOLDEN_ROOT = Path(__file__).resolve().parents[2] / "golden"


# Fingerprint fields whose differences the golden tolerance windows absorb (measured, see the docstring).
COVERED = frozenset({"cpu_capability", "threads", "cpu_count"})
SAME_STACK, COVERED_STACK, ADVISORY = "blocking (same stack)", "blocking (within tolerance)", "advisory"


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
    tier: str | None = None      # SAME_STACK, COVERED_STACK + what differs, or ADVISORY + why
    updated: bool = False
    golden_error: goldens.GoldenError | None = None  # the golden could not be read (missing or damaged)
    record_command: str | None = None  # how the caller records this golden (shown when it is missing)

    @property
    def failures(self) -> list[str]:
        """Parity with eager first (it always blocks), then the golden: a blocking comparison's
        failures, or why there is nothing to compare with."""
        found = [f"parity with eager: {f}" for f in self.parity.failures]
        if self.golden_error is not None:
            found.append(self._golden_error_line())
        elif self.blocking and self.against_golden is not None:
            found += [f"against {self.golden_path.name}: {f}" for f in self.against_golden.failures]
        return found

    def _golden_error_line(self) -> str:
        if not self.parity.ok:
            return f"and {self.golden_error} (one is recorded only once parity with eager passes)"
        verb = "record it" if isinstance(self.golden_error, goldens.MissingGolden) else "fix it, or record it anew"
        how = f"; {verb} with: {self.record_command}" if self.record_command else ""
        return f"parity with eager passed ({self.parity.summary()}), but {self.golden_error}{how}"


def check(case: cases.Case, impl: Implementation, options: Options = Options(), steps: int | None = None,
          golden_root: Path = GOLDEN_ROOT, update: bool = False, record_command: str | None = None) -> Outcome:
    """Run ``case`` and judge it; ``record_command`` is the caller's way to record the golden (pytest's
    or the CLI's), named in the failure when there is none."""
    steps = steps or case.training.steps
    runs = runner.run_all(case, impl, options, steps, oracle=isinstance(case.tolerance, CurveTolerance))
    outcome = Outcome(case, runs["eager"], runs["actual"], parity(case, runs),
                      goldens.path_for(golden_root, case.golden_folder, impl.name, options.device, case.training.dtype),
                      record_command=record_command)
    if update:
        if outcome.parity.ok:
            goldens.write(outcome.golden_path, goldens.Golden(outcome.actual, case.config(steps), case.tolerance,
                                                                  case.training.dtype))
            outcome.updated = True
        return outcome
    try:
        outcome.golden = goldens.load(outcome.golden_path)
    except goldens.GoldenError as error:
        outcome.golden_error = error
        return outcome
    outcome.against_golden = compare(outcome.golden.run, outcome.actual, outcome.golden.tolerance)
    outcome.tier, outcome.advisory = golden_tier(outcome.golden, outcome.actual, case.config(steps))
    outcome.blocking = outcome.advisory is None
    return outcome


def parity(case: cases.Case, runs: dict[str, CaseRun]) -> GateResult:
    """Same-job parity: the float64 oracle for per-step cases, the case's band tolerance otherwise."""
    if isinstance(case.tolerance, CurveTolerance):
        return oracle_parity(runs)
    return compare(runs["eager"], runs["actual"], case.tolerance)


def golden_tier(golden: goldens.Golden, actual: CaseRun, config: dict) -> tuple[str, str | None]:
    """(the tier the golden comparison runs in, why it is advisory or None when it blocks).

    Fields the golden predates (:data:`determinism.LATER_FIELDS`, from goldens recorded before the
    fingerprint held them) are unknown, not different: the tier names them and still blocks, since
    the determinism settings, compared here, pinned TF32 and deterministic algorithms then too, and
    the GPU's name implies its architecture.
    """
    for what, recorded_settings, current_settings in (("another configuration", golden.config, config),
                                                      ("other determinism settings", golden.run.determinism, actual.determinism)):
        changed = _changed(recorded_settings, current_settings)
        if changed:
            why = f"recorded with {what} ({', '.join(changed)})"
            return f"{ADVISORY}: {why}", why
    recorded, current = golden.run.fingerprint, actual.fingerprint
    differences = determinism.fingerprint_differences(recorded, current)
    meaningful = [line for line in differences if line.split(":")[0] not in COVERED]
    if meaningful:
        why = "recorded on another stack (" + "; ".join(meaningful) + ")"
        return f"{ADVISORY}: {why}", why
    unknown = determinism.unrecorded(recorded, current)
    note = f"; not in the golden (older code): {', '.join(unknown)}" if unknown else ""
    if differences:
        return f"{COVERED_STACK}: " + "; ".join(differences) + note, None
    return SAME_STACK + note, None


def _changed(recorded: dict, current: dict) -> list[str]:
    return sorted(key for key in set(recorded) | set(current) if recorded.get(key) != current.get(key))
