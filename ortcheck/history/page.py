"""``ortcheck history page``: the history as one self-contained page, the style of ``summary.html``.

Per group of comparable runs (implementation selection, device, machine): the verdict counts run by
run (a stacked bar chart, inline PNG), the latest run's events, and every property whose verdict
changed within the group, one coloured cell per run, so a property drifting in and out of failure
shows as a stripe; and the numbers followed over runs (each convergence case's oracle ratio and share
of its golden's window, each benchmark's step-time ratio to eager), one column per run.
"""
from __future__ import annotations

import base64
import html
import io
import json
import sqlite3

from ortcheck.history import events as events_module
from ortcheck.report.html import LABEL, STYLE

_STATUSES = ("pass", "refused", "fail", "error", "expected-fail", "xpass", "skip", "n/a")
_LABELS = {**LABEL, "xpass": "XPASS"}
_COLOURS = {"pass": "#5cb85c", "refused": "#7986cb", "fail": "#d9534f", "error": "#8b0000", "expected-fail": "#f0ad4e",
            "xpass": "#9c27b0", "skip": "#bbbbbb", "n/a": "#dddddd"}


def render(connection: sqlite3.Connection, title: str = "ortcheck history") -> str:
    e = html.escape
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{e(title)}</title>",
             f"<style>{STYLE} td.xpass {{ background: #e1bee7; }}</style></head><body><h1>{e(title)}</h1>"]
    groups = connection.execute("SELECT impl, device, machine, GROUP_CONCAT(id) FROM runs"
                                " GROUP BY impl, device, machine ORDER BY MAX(id)").fetchall()
    if not groups:
        parts.append("<p>No runs yet.</p>")
    for impl, device, machine, ids in groups:
        runs = [int(i) for i in ids.split(",")]
        parts.append(f"<h2 class='group'>{e(str(impl))} on {e(str(device))}: {e(str(machine))}</h2>")
        counts = {run: _counts(connection, run) for run in runs}
        parts.append(_chart(runs, counts))
        parts.append("<table class='runs'><tr><th>run</th><th>finished</th>"
                     + "".join(f"<th>{_LABELS[s]}</th>" for s in _STATUSES) + "</tr>")
        for run in runs:
            finished = connection.execute("SELECT finished FROM runs WHERE id = ?", (run,)).fetchone()[0]
            parts.append(f"<tr><td>{run}</td><td>{e(str(finished or '-'))}</td>"
                         + "".join(f"<td>{counts[run].get(s, 0)}</td>" for s in _STATUSES) + "</tr>")
        parts.append("</table>")
        parts += _events(events_module.compare(connection, runs[-1]))
        parts += _stripes(connection, runs)
        parts += _trends(connection, runs)
    return "".join(parts) + "</body></html>\n"


def _counts(connection: sqlite3.Connection, run: int) -> dict[str, int]:
    return dict(connection.execute("SELECT status, COUNT(*) FROM verdicts WHERE run_id = ? GROUP BY status", (run,)))


def _chart(runs: list[int], counts: dict[int, dict[str, int]]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(max(3.0, 0.5 * len(runs) + 2), 2.4))
    bottom = [0] * len(runs)
    labels = [str(run) for run in runs]
    for status in _STATUSES:
        heights = [counts[run].get(status, 0) for run in runs]
        if any(heights):
            axes.bar(labels, heights, bottom=bottom, color=_COLOURS[status], label=_LABELS[status])
            bottom = [b + h for b, h in zip(bottom, heights)]
    axes.set_xlabel("run")
    axes.set_ylabel("verdicts")
    axes.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=80)
    plt.close(figure)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f"<img class='trend' alt='verdict counts per run' src='data:image/png;base64,{data}'>"


def _events(comparison: events_module.Comparison) -> list[str]:
    e = html.escape
    if comparison.previous is None:
        return ["<p>First run of this group: nothing to compare with.</p>"]
    parts = [f"<h3>Run {comparison.run} against run {comparison.previous}</h3><ul class='events'>"]
    parts += [f"<li><b>{e(ev.kind)}</b> {e(ev.impl)} <code>{e(ev.property)}</code>: "
              + (f"{e(str(ev.before or 'absent'))} &rarr; {e(str(ev.now or 'absent'))}" if ev.before or ev.now else e(ev.reason))
              + "</li>" for ev in comparison.events] or ["<li>no change</li>"]
    return parts + ["</ul>"]


def _stripes(connection: sqlite3.Connection, runs: list[int]) -> list[str]:
    marks = ",".join("?" * len(runs))
    rows = connection.execute(f"SELECT property, impl, run_id, status, reason FROM verdicts WHERE run_id IN ({marks})",
                              runs).fetchall()
    by_key: dict[tuple[str, str], dict[int, tuple[str, str]]] = {}
    for prop, impl, run, status, reason in rows:
        by_key.setdefault((prop, impl), {})[run] = (status, reason)
    changed = {key: seen for key, seen in by_key.items()
               if len({status for status, _ in seen.values()}) > 1 or len(seen) < len(runs)}
    if not changed:
        return ["<p>No verdict changed in these runs.</p>"]
    e = html.escape
    parts = ["<table class='stripes'><tr><th>property</th><th>impl</th>" + "".join(f"<th>{r}</th>" for r in runs) + "</tr>"]
    for (prop, impl), seen in sorted(changed.items()):
        cells = [f"<td class='{e(seen[r][0])}' title='{e(seen[r][1])}'>{_LABELS.get(seen[r][0], e(seen[r][0]))}</td>"
                 if r in seen else "<td>-</td>" for r in runs]
        parts.append(f"<tr><td><code>{e(prop)}</code></td><td>{e(impl)}</td>{''.join(cells)}</tr>")
    return parts + ["</table>"]


def _trends(connection: sqlite3.Connection, runs: list[int]) -> list[str]:
    """One row per number followed over runs (convergence entries, benchmark ratios), a column per run."""
    marks = ",".join("?" * len(runs))
    series: dict[str, dict[int, float]] = {}
    for run, test, data in connection.execute(f"SELECT run_id, test, data FROM convergence WHERE run_id IN ({marks})", runs):
        entry = json.loads(data)
        for name, _, measure in events_module.DRIFT_MEASURES:
            value = measure(entry)
            if value is not None:
                series.setdefault(f"{test}: {name}", {})[run] = value
    for run, bench, impl, value in connection.execute(
            f"SELECT run_id, bench, impl, value FROM benchmarks WHERE figure = ? AND run_id IN ({marks})",
            (events_module.STEP_TIME_FIGURE, *runs)):
        series.setdefault(f"{bench}: {impl} step time / eager's", {})[run] = value
    if not series:
        return []
    e = html.escape
    parts = ["<h3>Numbers over runs</h3><table class='trends'><tr><th>what</th>" + "".join(f"<th>{r}</th>" for r in runs) + "</tr>"]
    for what, values in sorted(series.items()):
        cells = "".join(f"<td>{values[r]:.3g}</td>" if r in values else "<td>-</td>" for r in runs)
        parts.append(f"<tr><td><code>{e(what)}</code></td>{cells}</tr>")
    return parts + ["</table>"]
