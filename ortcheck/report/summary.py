"""``summary.json`` and ``summary.md``: one format for a run, a shard and a merged report.

The JSON keeps the raw outcomes (one per test item and implementation), so reports can be merged
(``ortcheck.report.merge``); the Markdown leads with what a reader wants first: counts per
implementation and the failures, then the matrix grouped by suite, convergence and memory plans.
"""
from __future__ import annotations

import os
from pathlib import Path

from ortcheck.report import html
from ortcheck.report.collector import STATUSES, Outcome
from ortcheck.report.matrix import ConformanceMatrix, write_json


def matrix_of(summary: dict) -> ConformanceMatrix:
    return ConformanceMatrix.from_outcomes_by_family([Outcome(**raw) for raw in summary["outcomes"]])


def write_summary(folder: Path, summary: dict, title: str) -> None:
    """``summary.json``, ``summary.md`` and the self-contained ``summary.html`` in ``folder``."""
    write_json(folder / "summary.json", summary)
    (folder / "summary.md").write_text(markdown(folder, summary, title))
    (folder / "summary.html").write_text(html.render(summary, matrix_of(summary), title))


def markdown(folder: Path, summary: dict, title: str) -> str:
    matrix = matrix_of(summary)
    environment = summary["environment"]
    lines = [f"# {title}", ""]
    lines += [f"- {key}: {value}" for key, value in environment.items() if value not in (None, "", [])]
    lines += [f"- column `{impl}`: {'; '.join(origins)}" for impl, origins in summary.get("columns", {}).items()]
    lines += ["", "## Counts", "", _counts_table(matrix), ""]
    failures = [o for o in sorted(matrix.cells.values(), key=lambda o: (o.impl, o.property))
                if o.status in ("fail", "error")]
    lines += ["## Failures", ""] + ([f"- **{o.impl}** `{o.property}`: {o.detail}" for o in failures] or ["none"])
    lines += ["", "## Conformance", "", matrix.to_markdown(grouped=True), ""]
    lines += _by_machine(summary.get("findings_by_machine"))
    lines += _convergence(folder, summary.get("convergence", [])) + _memory(summary.get("memory_plans", []))
    return "\n".join(lines)


def _counts_table(matrix: ConformanceMatrix) -> str:
    statuses = STATUSES
    lines = ["| implementation | " + " | ".join(statuses) + " |", "|---|" + "---:|" * len(statuses)]
    for impl, counts in matrix.counts_by_impl().items():
        lines.append(f"| {impl} | " + " | ".join(str(counts[s]) for s in statuses) + " |")
    return "\n".join(lines)


def _convergence(folder: Path, convergence: list[dict]) -> list[str]:
    """One row per convergence test: status, deviation from eager, links to its plot and table, golden tier."""
    if not convergence:
        return []
    lines = ["## Convergence", "", "| test | status | parity with eager | plot | table | golden |",
             "|---|---|---|---|---|---|"]
    for entry in sorted(convergence, key=lambda e: e["test"]):
        links = [f"[{kind}]({os.path.relpath(entry[key], folder)})" if key in entry else "-"
                 for key, kind in (("report_png", "png"), ("report_csv", "csv"))]
        lines.append(f"| `{entry['test'].split('::')[-1]}` | {entry['status']} | {entry['convergence_parity']} | "
                     f"{links[0]} | {links[1]} | {entry.get('golden_tier', '-')} |")
    return lines + [""]


def _memory(memory_plans: list[dict]) -> list[str]:
    """The memory optimizer's plan tables, one per recompute test that attached one."""
    if not memory_plans:
        return []
    lines = ["## Memory optimizer (recompute)", ""]
    for entry in sorted(memory_plans, key=lambda e: e["test"]):
        lines += [f"`{entry['test'].split('::')[-1]}`", "", entry["table"], ""]
    return lines


def _by_machine(table: list[dict] | None) -> list[str]:
    """Merged reports: the findings that held on some machines only, then how many held everywhere."""
    if not table:
        return []
    specific = [row for row in table if row["not_on"]]
    lines = ["## Findings by machine", "", f"{len(table) - len(specific)} finding(s) held on every machine; "
             f"{len(specific)} on some only.", ""]
    if specific:
        lines += ["| implementation | test | held on | not on |", "|---|---|---|---|"]
        lines += [f"| {row['impl']} | `{row['property']}` | {'; '.join(row['held_on'])} | "
                  + "; ".join(f"{where} ({status})" for where, status in row["not_on"].items()) + " |"
                  for row in specific]
    return lines + [""]
