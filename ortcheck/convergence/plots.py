"""Per-case reports: a PNG of the loss curves with their relative difference, and the step table as CSV.

Why a plot as well as the gate: a curve that stays inside tolerance while drifting one way, or a
golden recorded from a run that never trained, is obvious to the eye long before it fails a bound.
"""
from __future__ import annotations

import csv
from pathlib import Path

from ortcheck.convergence.gate import relative_difference
from ortcheck.convergence.workflow import Outcome


def write(outcome: Outcome, folder: Path) -> tuple[Path, Path]:
    """``<case>-<impl>.png`` and ``<case>-<impl>.csv`` in ``folder``; returns both paths."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{outcome.case.name}-{outcome.actual.impl}"
    png, table = folder / f"{stem}.png", folder / f"{stem}.csv"
    _plot(outcome, png)
    _table(outcome, table)
    return png, table


def _series(outcome: Outcome) -> dict[str, list[float]]:
    series = {"eager": outcome.eager.mean("loss"), outcome.actual.impl: outcome.actual.mean("loss")}
    if outcome.golden is not None:
        series["golden"] = outcome.golden.run.mean("loss")
    return series


def _relative(values: list[float], reference: list[float]) -> list[float]:
    return [relative_difference(v, r) for v, r in zip(values, reference)]


def _plot(outcome: Outcome, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    series = _series(outcome)
    figure, (top, bottom) = pyplot.subplots(2, 1, sharex=True, figsize=(7, 5.5), height_ratios=(3, 2))
    styles = {"eager": dict(color="black", linewidth=2.5, alpha=0.5), "golden": dict(color="tab:orange", linestyle="--")}
    for name, values in series.items():
        top.plot(range(len(values)), values, label=name, **styles.get(name, dict(color="tab:blue", linewidth=1)))
    seeds = len(outcome.eager.curves)
    top.set_ylabel("loss" + (f" (mean of {seeds} seeds)" if seeds > 1 else ""))
    top.set_title(f"{outcome.case.name}: {outcome.actual.impl} vs eager ({outcome.actual.device})")
    top.legend()
    for name, values in series.items():
        if name != "eager":
            rel = [max(r, 1e-12) for r in _relative(values, series["eager"])]
            bottom.semilogy(range(len(rel)), rel, label=f"|{name} - eager| / |eager|")
    bottom.set_xlabel("step")
    bottom.set_ylabel("relative difference")
    bottom.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    pyplot.close(figure)


def _table(outcome: Outcome, path: Path) -> None:
    series = _series(outcome)
    impl = outcome.actual.impl
    columns = {"step": range(len(series["eager"])), **{f"{name}_loss": values for name, values in series.items()},
               f"{impl}_vs_eager_rel": _relative(series[impl], series["eager"]),
               "eager_grad_norm": outcome.eager.mean("grad_norm"), f"{impl}_grad_norm": outcome.actual.mean("grad_norm"),
               "lr": outcome.actual.mean("lr")}
    with path.open("w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(columns)
        writer.writerows(zip(*(list(c) for c in columns.values())))
