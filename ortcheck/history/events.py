"""What changed since the last comparable run: same implementation selection, device and machine.

Per (property, implementation), the latest run against the one before it:

- ``new_fail``: failing (FAIL or error) now, not before; ``fixed``: the other way round;
- ``new_finding``: an expected failure now (a manifest entry recorded it) where it passed before;
- ``no_longer_failing``: a recorded finding passed (a strict XPASS): its manifest entry is stale;
- ``now_refused``: passed before, refused now (a pipeline that stopped supporting something);
- ``missing``: in the previous run, absent now (a property that silently left the matrix);
- ``flaky``: failing now, and within the last ``WINDOW`` comparable runs it failed and then passed:
  reported as flaky instead of as new_fail (Allure's rule, windowed);
- ``factor_moved``: a numeric finding (an oracle failure, expected or not, in both runs) whose error
  over the bound moved by more than ``FACTOR_MOVE`` times either way: the defect grew, or shrank
  towards a pass that would make its manifest entry stale;
- ``drifting``: a convergence case, still passing, whose worst error against the float64 oracle (in
  units of eager's own error, the report's ``convergence_parity``) or whose share of its golden's
  window (``golden_window_used``) grew in each of the last ``DRIFT_RUNS`` runs: a curve walking
  towards its bound a little more every night;
- ``step_time``: a benchmark's step-time ratio to eager (``ratio_to_eager`` in the report folder's
  ``bench/*.json``) outside ``STEP_TIME_BAND`` times the median of the same figure over the previous
  comparable runs (at least ``STEP_TIME_RUNS`` of them, up to ``WINDOW``), slower or faster: the
  ratio, not seconds, because machines are noisy alike for eager and the implementation.

Machines differ (machine-conditional findings exist), so runs on different machines are never
compared: two machines' runs of one night sit side by side, each against its own previous run.
"""
from __future__ import annotations

import dataclasses
import json
import re
import sqlite3
import statistics

WINDOW = 5
DRIFT_RUNS = 3
FACTOR_MOVE = 2.0
STEP_TIME_BAND, STEP_TIME_RUNS, STEP_TIME_FIGURE = 1.25, 2, "ratio_to_eager"
GATING = ("new_fail", "missing", "no_longer_failing")  # what stops a nightly gate by default
KINDS = ("new_fail", "fixed", "new_finding", "no_longer_failing", "now_refused", "missing", "flaky", "factor_moved",
         "drifting", "step_time")
_FAILING, _PASSING = {"fail", "error"}, {"pass", "refused"}


@dataclasses.dataclass(frozen=True)
class Event:
    kind: str
    property: str
    impl: str
    before: str | None  # the previous run's status (None: absent)
    now: str | None
    reason: str


@dataclasses.dataclass(frozen=True)
class Comparison:
    run: int
    previous: int | None
    machine: str | None
    events: tuple[Event, ...]


def comparable_runs(connection: sqlite3.Connection, run_id: int) -> list[int]:
    """The runs comparable with ``run_id`` up to it, oldest first."""
    impl, device, machine = connection.execute("SELECT impl, device, machine FROM runs WHERE id = ?", (run_id,)).fetchone()
    rows = connection.execute("SELECT id FROM runs WHERE impl IS ? AND device IS ? AND machine IS ? AND id <= ?"
                              " ORDER BY id", (impl, device, machine, run_id)).fetchall()
    return [row[0] for row in rows]


def latest_runs(connection: sqlite3.Connection, since: int | None = None) -> list[int]:
    """The newest run of each (implementation selection, device, machine), newer than ``since``."""
    rows = connection.execute("SELECT MAX(id) FROM runs WHERE id > ? GROUP BY impl, device, machine ORDER BY 1",
                              (since or 0,)).fetchall()
    return [row[0] for row in rows]


def compare(connection: sqlite3.Connection, run_id: int) -> Comparison:
    runs = comparable_runs(connection, run_id)
    machine = connection.execute("SELECT machine FROM runs WHERE id = ?", (run_id,)).fetchone()[0]
    previous = runs[-2] if len(runs) > 1 else None
    if previous is None:
        return Comparison(run_id, None, machine, ())
    now, before = _verdicts(connection, run_id), _verdicts(connection, previous)
    window = {run: _verdicts(connection, run) for run in runs[-WINDOW:]}
    events = []
    for key in sorted(set(now) | set(before)):
        was, is_ = before.get(key, (None, ""))[0], now.get(key, (None, ""))[0]
        reason = (now.get(key) or before.get(key))[1]
        kind = _kind(was, is_)
        if kind == "new_fail" and _flaky([window[run].get(key, (None,))[0] for run in window]):
            kind = "flaky"
        if kind:
            events.append(Event(kind, key[0], key[1], was, is_, reason))
        elif _factor_moved(before.get(key), now.get(key)):
            events.append(Event("factor_moved", key[0], key[1], was, is_,
                                f"error over the bound {before[key][2]:.3g}x -> {now[key][2]:.3g}x"))
    events += _drifting(connection, runs[-(DRIFT_RUNS + 1):])
    events += _step_times(connection, runs[-(WINDOW + 1):])
    return Comparison(run_id, previous, machine, tuple(events))


# what a convergence entry is followed by, run by run: (its name, how its trail reads, its value in an entry)
DRIFT_MEASURES = (("oracle ratio", "worst error {} eager's", lambda entry: _oracle_ratio(entry)),
                  ("golden window used", "golden window used {}", lambda entry: entry.get("golden_window_used")))


def _drifting(connection: sqlite3.Connection, runs: list[int]) -> list[Event]:
    if len(runs) < DRIFT_RUNS + 1:
        return []
    entries: dict[str, list[dict | None]] = {}
    for position, run in enumerate(runs):
        for test, data in connection.execute("SELECT test, data FROM convergence WHERE run_id = ?", (run,)):
            entries.setdefault(test, [None] * len(runs))[position] = json.loads(data)
    found = []
    for test, per_run in sorted(entries.items()):
        for _, reads, measure in DRIFT_MEASURES:
            values = [measure(entry) if entry else None for entry in per_run]
            if None not in values and all(a < b for a, b in zip(values, values[1:])):
                found.append(Event("drifting", test, "", None, None, reads.format(" -> ".join(f"{v:.2f}x" for v in values))))
    return found


def _step_times(connection: sqlite3.Connection, runs: list[int]) -> list[Event]:
    marks = ",".join("?" * len(runs))
    rows = connection.execute(f"SELECT run_id, bench, impl, value FROM benchmarks WHERE figure = ? AND run_id IN ({marks})",
                              (STEP_TIME_FIGURE, *runs)).fetchall()
    series: dict[tuple[str, str], dict[int, float]] = {}
    for run, bench, impl, value in rows:
        series.setdefault((bench, impl), {})[run] = value
    found = []
    for (bench, impl), values in sorted(series.items()):
        now, before = values.get(runs[-1]), [values[run] for run in runs[:-1] if run in values]
        if now is None or len(before) < STEP_TIME_RUNS:
            continue
        median = statistics.median(before)
        low, high = median / STEP_TIME_BAND, median * STEP_TIME_BAND
        if not low <= now <= high:
            found.append(Event("step_time", bench, impl, None, None,
                               f"{'slower' if now > high else 'faster'}: {now:.2f}x eager, band {low:.2f}x-{high:.2f}x "
                               f"around the median {median:.2f}x of the last {len(before)} runs"))
    return found


def _factor_moved(before: tuple | None, now: tuple | None) -> bool:
    factors = [verdict[2] for verdict in (before, now) if verdict and verdict[2]]
    return len(factors) == 2 and max(factors) > FACTOR_MOVE * min(factors)


def _oracle_ratio(entry: dict) -> float | None:
    match = re.search(r"worst error ([0-9.]+)x", str(entry.get("convergence_parity", "")))
    return float(match.group(1)) if match else None


def _kind(was: str | None, is_: str | None) -> str | None:
    if is_ is None:
        return "missing" if was is not None else None
    if is_ == "xpass":
        return "no_longer_failing"
    if is_ in _FAILING and was not in _FAILING:
        return "new_fail"
    if was in _FAILING and is_ in _PASSING:
        return "fixed"
    if is_ == "expected-fail" and was in _PASSING:
        return "new_finding"
    if is_ == "refused" and was == "pass":
        return "now_refused"
    return None


def _flaky(statuses: list[str | None]) -> bool:
    """Failing now, and within the window an earlier failure was followed by a pass."""
    outcomes = ["fail" if s in _FAILING else "pass" for s in statuses if s in _FAILING | _PASSING]
    if not outcomes or outcomes[-1] != "fail":
        return False
    earlier = outcomes[:-1]
    return "fail" in earlier and "pass" in earlier[earlier.index("fail"):]


def _verdicts(connection: sqlite3.Connection, run_id: int) -> dict[tuple[str, str], tuple[str, str, float | None]]:
    rows = connection.execute("SELECT property, impl, status, reason, factor FROM verdicts WHERE run_id = ?", (run_id,))
    return {(prop, impl): (status, reason, factor) for prop, impl, status, reason, factor in rows}
