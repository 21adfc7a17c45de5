"""Report folders into the history: one transaction per run, a run already there skipped."""
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
    return run_id


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
