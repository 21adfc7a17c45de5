"""Report folders into the history: one transaction per run, a run already there skipped.

Besides ``summary.json``, a report folder may hold benchmark results in ``bench/<name>.json`` (what
``bench/step_time.py --json`` writes: per implementation its figures); their numbers are kept per run
(the nightly GPU job writes its step times there before the folder is ingested).
"""
from __future__ import annotations

import datetime
import hashlib
import json
import sqlite3
from pathlib import Path

from ortcheck.history.store import HistoryError, transaction
from ortcheck.report.merge import MergeError, load


def ingest(connection: sqlite3.Connection, folder: Path) -> int | None:
    """Read ``folder`` (a report ``ortcheck run`` or ``report merge`` wrote) into the history: its
    run id, or None when the same report was ingested before."""
    try:
        ((_, summary),) = load([Path(folder)])
    except MergeError as error:
        raise HistoryError(str(error)) from None
    digest = hashlib.sha256((Path(folder) / "summary.json").read_bytes()).hexdigest()
    figures = benchmark_figures(folder)  # read, and refused when malformed, before anything is written
    environment = summary.get("environment", {})
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    with transaction(connection):
        if connection.execute("SELECT 1 FROM runs WHERE digest = ?", (digest,)).fetchone():
            return None
        run_id = connection.execute(
            "INSERT INTO runs (digest, source, finished, ingested, impl, device, machine, torch, python, commit_id,"
            " hypothesis_seed, profile, environment) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (digest, str(folder), environment.get("finished"), now, environment.get("impl"), environment.get("device"),
             environment.get("machine"), environment.get("torch"), environment.get("python"), environment.get("commit"),
             environment.get("hypothesis_seed"), _profile(environment.get("hypothesis", "")),
             json.dumps(environment, sort_keys=True, default=str))).lastrowid
        connection.executemany(
            "INSERT OR REPLACE INTO verdicts (run_id, property, impl, status, reason, factor) VALUES (?, ?, ?, ?, ?, ?)",
            [(run_id, o["property"], o["impl"], status_of(o), _first_line(o.get("detail", "")), o.get("factor"))
             for o in summary["outcomes"]])
        connection.executemany(
            "INSERT INTO convergence (run_id, test, status, data) VALUES (?, ?, ?, ?)",
            [(run_id, entry.get("test", ""), entry.get("status", ""), json.dumps(entry, sort_keys=True, default=str))
             for entry in summary.get("convergence", [])])
        connection.executemany("INSERT INTO benchmarks (run_id, bench, impl, figure, value) VALUES (?, ?, ?, ?, ?)",
                               [(run_id, *row) for row in figures])
    return run_id


def benchmark_figures(folder: Path) -> list[tuple[str, str, str, float]]:
    """(benchmark, implementation, figure, value) of every number per implementation in the folder's
    ``bench/*.json`` (``{"results": {impl: {figure: number}}}``); HistoryError naming a malformed file."""
    rows = []
    for path in sorted((Path(folder) / "bench").glob("*.json")):
        try:
            results = json.loads(path.read_text())["results"]
            rows += [(path.stem, impl, figure, float(value)) for impl, row in results.items() if isinstance(row, dict)
                     for figure, value in row.items() if isinstance(value, (int, float)) and not isinstance(value, bool)]
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as error:
            raise HistoryError(f"{path}: not a benchmark result ({{\"results\": {{impl: {{figure: number}}}}}}): "
                               f"{type(error).__name__}: {error}") from None
    return rows


def status_of(outcome: dict) -> str:
    """The report's status, with a strict XPASS (reported as a failure) told apart: an expected failure
    that passed, whose manifest entry is stale."""
    if outcome["status"] == "fail" and "XPASS" in outcome.get("detail", ""):
        return "xpass"
    return outcome["status"]


def _profile(line: str) -> str | None:
    marker = "profile "
    return line.split(marker, 1)[1].split(";")[0].split(")")[0].split(":")[0].strip() if marker in line else None


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:300]
