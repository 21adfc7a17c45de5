"""``ortcheck history``: ingest report folders, list what changed, show one property's runs, a page, prune."""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import fnmatch
import json
from pathlib import Path

from ortcheck.history import events as events_module
from ortcheck.history.ingest import ingest
from ortcheck.history.store import HistoryError, opened, transaction
from ortcheck.report.merge import MergeError, load

DEFAULT = Path("report/history.sqlite")


def add_parser(commands) -> None:
    history = commands.add_parser("history", help="keep every run in one SQLite file; say what changed")
    actions = history.add_subparsers(dest="history_command", required=True, metavar="ACTION")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--history", type=Path, default=DEFAULT, metavar="DB",
                        help=f"the history file (default {DEFAULT})")
    ingest_parser = actions.add_parser("ingest", parents=[common], help="read report folders into the history")
    ingest_parser.add_argument("reports", nargs="+", type=Path, metavar="REPORT_DIR")
    events = actions.add_parser("events", parents=[common],
                                help="what changed in each latest run since the previous comparable one")
    events.add_argument("--since", type=int, default=None, metavar="RUN", help="only runs newer than this id")
    events.add_argument("--format", choices=("md", "json"), default="md")
    events.add_argument("--fail-on", default=",".join(events_module.GATING), metavar="KINDS",
                        help=f"event kinds that make the exit status 1 (default {','.join(events_module.GATING)}; "
                             f"valid: {','.join(events_module.KINDS)}; empty: never)")
    show = actions.add_parser("show", parents=[common], help="one property's verdicts, run by run")
    show.add_argument("property", help="a property (node id without the implementation), fnmatch patterns allowed")
    page = actions.add_parser("page", parents=[common], help="the history as one HTML page (trends, events, changes)")
    page.add_argument("--out", type=Path, default=Path("report/history.html"), metavar="FILE")
    prune = actions.add_parser("prune", parents=[common], help="forget runs older than N days")
    prune.add_argument("--keep-days", type=int, required=True, metavar="N")


def run(args: argparse.Namespace) -> int:
    try:
        return _ACTIONS[args.history_command](args)
    except HistoryError as error:
        print(f"ortcheck history: {error}")
        return 2


def _ingest(args) -> int:
    ingest_into(args.history, args.reports)
    return 0


def ingest_into(history: Path, reports: list[Path]) -> None:
    """Every folder a report, or nothing is written; then each in its own transaction."""
    try:
        load(reports)
    except MergeError as error:
        raise HistoryError(str(error)) from None
    with opened(history) as connection:
        for folder in reports:
            run_id = ingest(connection, folder)
            print(f"{folder}: " + (f"run {run_id} in {history}" if run_id else "already in the history"))


def _events(args) -> int:
    gating = [kind for kind in args.fail_on.split(",") if kind]
    unknown = sorted(set(gating) - set(events_module.KINDS))
    if unknown:
        raise HistoryError(f"unknown event kinds {', '.join(unknown)}; valid: {', '.join(events_module.KINDS)}")
    with opened(args.history, create=False) as connection:
        comparisons = [events_module.compare(connection, run) for run in events_module.latest_runs(connection, args.since)]
    if args.format == "json":
        print(json.dumps([dataclasses.asdict(c) for c in comparisons], indent=2))
    else:
        print(markdown(comparisons))
    stop = [e for c in comparisons for e in c.events if e.kind in gating]
    return 1 if stop else 0


def markdown(comparisons: list[events_module.Comparison]) -> str:
    lines = ["# What changed"]
    for comparison in comparisons:
        against = f"run {comparison.previous}" if comparison.previous else "nothing (first run here)"
        lines += ["", f"## Run {comparison.run} ({comparison.machine}) against {against}"]
        if comparison.previous and not comparison.events:
            lines.append("No change.")
        for kind in events_module.KINDS:
            chosen = [e for e in comparison.events if e.kind == kind]
            if chosen:
                lines += ["", f"**{kind}** ({len(chosen)})", ""]
                lines += [f"- {e.impl} `{e.property}`: {e.before or 'absent'} -> {e.now or 'absent'}"
                          + (f": {e.reason}" if e.reason else "") for e in chosen]
    return "\n".join(lines)


def _show(args) -> int:
    with opened(args.history, create=False) as connection:
        rows = connection.execute("SELECT r.id, r.finished, r.machine, v.impl, v.property, v.status, v.reason, v.factor"
                                  " FROM verdicts v JOIN runs r ON r.id = v.run_id ORDER BY v.property, v.impl, r.id").fetchall()
    rows = [row for row in rows if fnmatch.fnmatchcase(row[4], args.property) or row[4] == args.property]
    if not rows:
        raise HistoryError(f"no verdict of {args.property!r} in {args.history}")
    for run_id, finished, machine, impl, prop, status, reason, factor in rows:
        print(f"run {run_id} {finished or '-'} {impl} {prop}: {status}" + (f" {factor:.3g}x the bound" if factor else "")
              + (f" ({reason})" if reason else "") + f"  [{machine}]")
    return 0


def _page(args) -> int:
    from ortcheck.history.page import render

    with opened(args.history, create=False) as connection:
        text = render(connection, f"ortcheck history ({args.history.name})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"{args.out}")
    return 0


def _prune(args) -> int:
    if args.keep_days < 0:
        raise HistoryError(f"--keep-days {args.keep_days}: a number of days, 0 or more")
    cutoff = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=args.keep_days)).isoformat()
    with opened(args.history, create=False) as connection, transaction(connection):
        removed = connection.execute("DELETE FROM runs WHERE COALESCE(finished, ingested) < ?", (cutoff,)).rowcount
    print(f"{args.history}: {removed} runs older than {args.keep_days} days removed")
    return 0


_ACTIONS = {"ingest": _ingest, "events": _events, "show": _show, "page": _page, "prune": _prune}
