"""The gate: does an implementation's run match the expected one (eager's, or a golden's)?

Hard failures come first and need no tolerance: a non-finite value, a length mismatch, a step that
fell back to eager PyTorch (its parity would prove nothing about the pipeline). Parity with eager
in the same job is then judged by the float64 oracle step by step (:func:`oracle_parity`), or, for
runs that can't agree step by step (dropout), by statistical agreement over seeds
(:class:`BandTolerance`). Against a golden curve, the tolerance model applies: per-step windows with
bounded outliers and a tail-bias bound (:class:`CurveTolerance`). ``rows`` is the per-step table
the reports and ``ortcheck golden diff`` print.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Mapping
import statistics

from ortcheck.checks.oracle import FACTOR, curve_verdicts
from ortcheck.convergence.curves import METRICS, CaseRun
from ortcheck.convergence.tolerance import BandTolerance, CurveTolerance, StepTolerance, Tolerance


def relative_difference(actual: float, expected: float) -> float:
    """|actual - expected| / |expected| (the absolute difference where expected is 0)."""
    return abs(actual - expected) / abs(expected) if expected else abs(actual)


@dataclasses.dataclass(frozen=True)
class Row:
    step: int
    metric: str
    expected: float
    actual: float
    bound: float | None  # None: not gated per step (band tolerance)

    @property
    def relative(self) -> float:
        return relative_difference(self.actual, self.expected)

    @property
    def within(self) -> bool | None:
        return None if self.bound is None else abs(self.actual - self.expected) <= self.bound


@dataclasses.dataclass
class GateResult:
    failures: list[str]
    rows: list[Row]  # of the first seed
    band_z: float | None = None  # band tolerance: standard errors between the final-window means
    oracle_ratio: float | None = None  # float64 oracle: the largest error / scale (FACTOR allowed)

    def summary(self) -> str:
        """One line for reports: the oracle's worst ratio, the band statistic, or the largest deviations."""
        if self.band_z is not None:
            return f"final loss {self.band_z:+.2f} standard errors from eager"
        if self.oracle_ratio is not None:
            return f"float64 oracle: worst error {self.oracle_ratio:.2f}x the scale (bound {FACTOR:g}x)"
        return f"max rel. loss {self.max_relative('loss'):.2e}, grad norm {self.max_relative('grad_norm'):.2e}"

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def window_used(self) -> float | None:
        """The largest share of its step's window a gated step used (|actual - expected| / bound; above 1
        it is out of tolerance): how close a run came to its golden's edge, which nightly history
        follows run by run. None where nothing is gated by a window (band tolerance, exact metrics)."""
        return max((abs(row.actual - row.expected) / row.bound for row in self.rows if row.bound), default=None)

    def max_relative(self, metric: str) -> float:
        return max((row.relative for row in self.rows if row.metric == metric), default=0.0)

    def message(self) -> str:
        return "; ".join(self.failures)


def compare(expected: CaseRun, actual: CaseRun, tolerance: Tolerance) -> GateResult:
    failures = _hard_failures(expected, actual)
    rows, band_z = [], None
    if not failures:
        if isinstance(tolerance, CurveTolerance):
            for e, a in zip(expected.curves, actual.curves):
                for metric, step_tolerance in tolerance.metrics.items():
                    seed_rows = _rows(metric, e.metrics[metric], a.metrics[metric], step_tolerance)
                    failures += [f"seed {e.seed}: {f}" for f in _judge(metric, seed_rows, step_tolerance)]
                    rows += seed_rows if e is expected.curves[0] else []
        else:
            band_failures, band_z = _band(expected, actual, tolerance)
            failures += band_failures
            first_e, first_a = expected.curves[0], actual.curves[0]
            rows = [Row(step, metric, x, y, 0.0 if metric in tolerance.exact else None)
                    for metric in METRICS for step, (x, y) in enumerate(zip(first_e.metrics[metric], first_a.metrics[metric]))]
    return GateResult(failures, rows, band_z)


def oracle_parity(runs: Mapping[str, CaseRun], metrics: tuple[str, ...] = ("loss", "grad_norm"),
                  exact_metrics: tuple[str, ...] = ("lr",)) -> GateResult:
    """Per-step parity judged by the float64 oracle (:func:`ortcheck.checks.curve_verdicts`) over the
    runs of ``ortcheck.checks.RUNS``: each step of each metric within FACTOR x the scale eager's own
    float32 error and operand rounding give it; ``exact_metrics`` (the learning rate) equal to eager's."""
    eager, actual = runs["eager"], runs["actual"]
    failures = _hard_failures(eager, actual)
    failures += [f"seed {e.seed}: eager's scaled gradients overflowed at steps {e.skipped_steps}: the case's loss "
                 f"scale leaves no margin (the float64 runs cannot overflow, so they cannot follow)"
                 for e in eager.curves if e.skipped_steps]
    rows, worst, beyond = [], 0.0, []
    if not failures:
        for index, (e, a) in enumerate(zip(eager.curves, actual.curves)):
            for metric in metrics:
                verdicts = curve_verdicts({run: case_run.curves[index].metrics[metric] for run, case_run in runs.items()},
                                          f"seed {e.seed}: {metric}")
                worst = max([worst] + [v.ratio for v in verdicts])
                bad = [v for v in verdicts if not v.ok]
                if bad:  # the worst step named: its factor over the bound is the finding's margin
                    beyond.append((max(v.ratio for v in bad), f"{len(bad)} of {len(verdicts)} steps beyond the float64 "
                                   f"oracle's bound; worst: " + max(bad, key=lambda v: v.ratio).message()))
                if e is eager.curves[0]:
                    rows += [Row(step, metric, v.exact, v.actual, v.bound) for step, v in enumerate(verdicts)]
            for metric in exact_metrics:
                step = next((i for i, (p, q) in enumerate(zip(e.metrics[metric], a.metrics[metric])) if p != q), None)
                if step is not None:
                    failures.append(f"seed {e.seed}: {metric} at step {step} is {a.metrics[metric][step]!r}, "
                                    f"eager's {e.metrics[metric][step]!r} (must be equal)")
                if e is eager.curves[0]:
                    rows += [Row(i, metric, p, q, 0.0) for i, (p, q) in enumerate(zip(e.metrics[metric], a.metrics[metric]))]
    failures += [text for _, text in sorted(beyond, key=lambda pair: -pair[0])]  # the worst metric first
    return GateResult(failures, rows, oracle_ratio=worst)


def _hard_failures(expected: CaseRun, actual: CaseRun) -> list[str]:
    failures = []
    if [c.seed for c in expected.curves] != [c.seed for c in actual.curves]:
        return [f"seeds differ: expected {[c.seed for c in expected.curves]}, got {[c.seed for c in actual.curves]}"]
    for e, a in zip(expected.curves, actual.curves):
        for metric in METRICS:
            if len(e.metrics[metric]) != len(a.metrics[metric]):
                failures.append(f"seed {e.seed}: {metric} has {len(a.metrics[metric])} steps, expected {len(e.metrics[metric])}")
            bad = next((i for i, v in enumerate(a.metrics[metric]) if not math.isfinite(v)), None)
            if bad is not None:
                failures.append(f"seed {e.seed}: {metric} is {a.metrics[metric][bad]} at step {bad}")
        if a.skipped_steps != e.skipped_steps:
            failures.append(f"seed {a.seed}: GradScaler skipped steps {a.skipped_steps} (a scaled gradient overflowed), "
                            f"{expected.impl} skipped {e.skipped_steps}")
        if a.fallback_steps:
            failures.append(f"seed {a.seed}: {actual.impl} fell back to eager PyTorch at steps {a.fallback_steps}")
    return failures


def _rows(metric: str, expected: list[float], actual: list[float], tolerance: StepTolerance) -> list[Row]:
    return [Row(step, metric, x, y, tolerance.bound(step, x)) for step, (x, y) in enumerate(zip(expected, actual))]


def _judge(metric: str, rows: list[Row], tolerance: StepTolerance) -> list[str]:
    """Per-step bounds with a bounded number of outliers (each within ``outlier_factor``), then tail bias."""
    failures = []
    outside = [row for row in rows if not row.within]
    far = [row for row in outside if abs(row.actual - row.expected) > tolerance.outlier_factor * row.bound]
    allowed = tolerance.max_outliers(len(rows))
    if far or len(outside) > allowed:
        worst = max(outside, key=lambda row: abs(row.actual - row.expected) / max(row.bound, 1e-300))
        failures.append(f"{metric}: {len(outside)} of {len(rows)} steps out of tolerance (allowed {allowed} outliers, "
                        f"{len(far)} beyond {tolerance.outlier_factor}x); worst step {worst.step}: "
                        f"{worst.actual!r} vs {worst.expected!r} (bound {worst.bound:.3g})")
    if tolerance.tail_bias is not None and rows:
        tail = rows[tolerance.tail_start(len(rows)):]
        bias = statistics.fmean((row.actual - row.expected) / abs(row.expected) if row.expected else 0.0 for row in tail)
        if abs(bias) > tolerance.tail_bias:
            failures.append(f"{metric}: mean relative bias {bias:.3g} over the last {len(tail)} steps exceeds {tolerance.tail_bias:g}")
    return failures


def _band(expected: CaseRun, actual: CaseRun, tolerance: BandTolerance) -> tuple[list[str], float]:
    failures = []
    for metric in tolerance.exact:
        for e, a in zip(expected.curves, actual.curves):
            if e.metrics[metric] != a.metrics[metric]:
                step = next(i for i, (x, y) in enumerate(zip(e.metrics[metric], a.metrics[metric])) if x != y)
                failures.append(f"seed {e.seed}: {metric} differs at step {step}: {a.metrics[metric][step]!r} vs {e.metrics[metric][step]!r}")
    window = tolerance.final_window
    for run in (expected, actual):
        for curve in run.curves:
            values = curve.metrics[tolerance.metric]
            first, last = statistics.fmean(values[:window]), statistics.fmean(values[-window:])
            if last > (1 - tolerance.min_improvement) * first:
                failures.append(f"{run.impl} seed {curve.seed} did not train: {tolerance.metric} {first:.4g} -> {last:.4g} "
                                f"(needs <= {1 - tolerance.min_improvement:g}x)")
    e_means = [statistics.fmean(c.metrics[tolerance.metric][-window:]) for c in expected.curves]
    a_means = [statistics.fmean(c.metrics[tolerance.metric][-window:]) for c in actual.curves]
    difference = statistics.fmean(a_means) - statistics.fmean(e_means)
    standard_error = math.sqrt(_variance(e_means) / len(e_means) + _variance(a_means) / len(a_means))
    z = difference / standard_error if standard_error else (0.0 if difference == 0 else math.copysign(math.inf, difference))
    if abs(difference) > tolerance.z * standard_error + tolerance.atol:
        failures.append(f"final-{window}-step mean {tolerance.metric} differs from the expected runs' by {difference:.4g}, "
                        f"{abs(z):.1f} standard errors (allowed {tolerance.z:g}, over {len(a_means)} seeds)")
    return failures, z


def _variance(values: list[float]) -> float:
    return statistics.variance(values) if len(values) > 1 else 0.0
