"""``ortcheck findings --check``: every manifest entry proves itself, numeric ones with margin.

A strict expected failure that only some seeds reach turns a correct run red on the seeds that miss
it (an XPASS), and a numeric finding recorded at 1.05x its bound flips on the next CPU. So each
entry's tests run with its examples alone (``--findings-check``: hypothesis draws nothing; an entry
marked ``every_draw`` runs its first draw) and must fail as recorded. A test that draws nothing
runs whole, which is how a property without draws proves itself. Where the failure is numeric
("implementation error E > bound B") the factor E / B is printed, and below :data:`MARGIN` the entry
fails the check: it would not hold on another machine. The test command does the same within its own
run (``--prove-findings``: expected failures run so, and the entries whose tests ran are judged at
its end), so CI runs each finding's tests once.
"""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from ortcheck import impls, machine, profiles
from ortcheck.findings import failures, manifest
from ortcheck.report.collector import impl_of

MARGIN = 4.0
SUITES = Path(__file__).resolve().parents[2] / "suites"
_NO_DRAWS = "Hypothesis has been told to run no"  # hypothesis skips a property given no phase that draws and no example


@dataclasses.dataclass
class Verdict:
    finding: manifest.Finding
    statuses: dict[str, str] = dataclasses.field(default_factory=dict)  # node id -> xfail/fail/xpass/skip
    lines: dict[str, str] = dataclasses.field(default_factory=dict)     # node id -> failure's first line

    @property
    def factor(self) -> float | None:
        """The smallest error / bound among its tests' failures (None: not a numeric finding)."""
        found = [factor for factor in map(failures.numeric_factor, self.lines.values()) if factor is not None]
        return min(found) if found else None

    def problem(self) -> str | None:
        """Why the entry fails the check, or None."""
        ran = {nodeid: status for nodeid, status in self.statuses.items() if status != "skip"}
        if not ran:
            return None
        passed = [nodeid for nodeid, status in ran.items() if status == "xpass"]
        if passed:
            why = "its examples pass" if self.finding.examples else (
                "it has no examples and its property draws (add examples, or every_draw = true if it fails on "
                "every draw)")
            return f"{why}: {passed[0]}" + (f" (+{len(passed) - 1})" if len(passed) > 1 else "")
        wrong = [f"{nodeid}: {self.lines.get(nodeid, 'failed')}" for nodeid, status in ran.items() if status == "fail"]
        if wrong:
            return f"fails, but not as recorded: {wrong[0]}"
        factor = self.factor
        if factor is not None and factor < MARGIN:
            return f"numeric finding at {factor:.2f}x its bound, below {MARGIN:g}x"
        return None


class Collector:
    """A pytest plugin gathering each test's outcome and first failure line (on the xdist controller)."""

    def __init__(self, findings: dict[str, list[manifest.Finding]]):
        self.findings = findings
        self.verdicts = {f.source: Verdict(f) for entries in findings.values() for f in entries}

    def pytest_runtest_logreport(self, report):
        if report.when != "call" and not (report.failed or report.skipped):
            return
        # a crashed worker's report (xdist builds it) carries no properties of the item: the id names the impl
        impl = dict(report.user_properties).get("ortcheck_impl") or impl_of(report.nodeid)
        finding = manifest.first_match(self.findings.get(impl, []), report.nodeid)
        if finding is None:
            return
        verdict = self.verdicts[finding.source]
        _, line = dict(report.user_properties).get(failures.FAILURE_PROPERTY) or (None, "")
        if hasattr(report, "wasxfail") and report.skipped:
            verdict.statuses[report.nodeid] = "xfail"
        elif report.failed and "XPASS(strict)" in str(report.longrepr):
            verdict.statuses[report.nodeid] = "xpass"
        elif report.failed:
            verdict.statuses[report.nodeid] = "fail"
            line = dict(report.user_properties).get("ortcheck_not_as_recorded") or line or report.longreprtext[-200:]
        elif report.skipped and _NO_DRAWS in str(report.longrepr):
            verdict.statuses[report.nodeid] = "xpass"  # a drawing property without examples proves nothing
        elif report.skipped and report.nodeid not in verdict.statuses:
            verdict.statuses[report.nodeid] = "skip"
        if line:
            verdict.lines[report.nodeid] = line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--check", action="store_true",
                        help="run every entry's examples alone (implementations available here); fail on an entry "
                             f"whose examples pass, that fails otherwise than recorded, or that is numeric below {MARGIN:g}x")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                        help="--check: the device the entries' examples run on (entries hold where their `when` says)")
    parser.add_argument("--profile", choices=profiles.PROFILES, default=None,
                        help="--check: the hypothesis profile the examples run under (default: the environment's); "
                             "entries `when.profiles` names hold under theirs only")
    parser.add_argument("-n", dest="workers", default="1",
                        help="--check: pytest-xdist workers (default 1; a crash then costs one test, not the check)")


def run(args: argparse.Namespace) -> int:
    names = [n for n in (args.impl or impls.names()) if impls.get(n).unavailable_reason() is None]
    device = getattr(args, "device", "cpu")
    profile = getattr(args, "profile", None) or profiles.default_profile()  # the check's pytest run draws under it
    here = machine.current(device, profile)
    findings = {n: [f for f in manifest.load(impls.get(n).manifest_path()) if f.active_on(here)] for n in names}
    findings = {n: entries for n, entries in findings.items() if entries}
    if not findings:
        print("ortcheck findings --check: no active finding of an implementation available here")
        return 0
    collector = Collector(findings)
    pytest.main(["-q", "-p", "no:cacheprovider", "--findings-check", "--impl", ",".join(findings), "--device", device,
                 "--hypothesis-profile", profile, "-n", str(args.workers), str(SUITES)], plugins=[collector])
    return report(collector.verdicts.values(), device)


def report(verdicts, device: str = "cpu", write=print, ran_only: bool = False) -> int:
    """Write one line per entry (``ran_only``: per entry whose tests ran here); 1 when any entry fails the check."""
    write(f"\nortcheck findings --check on {machine.describe(device)} (margin {MARGIN:g}x):")
    failed = not_run = 0
    for verdict in verdicts:
        finding, problem = verdict.finding, verdict.problem()
        factor = verdict.factor
        measured = "" if factor is None else f" {factor:.2f}x" + (
            f" (recorded {finding.factor:g}x)" if finding.factor else " (no factor recorded)")
        if not any(status != "skip" for status in verdict.statuses.values()):
            state = "not run here"
            not_run += 1
            if ran_only:
                continue
        else:
            state = "FAIL" if problem else "ok"
        failed += bool(problem)
        write(f"{state:12} {finding.source}{measured}" + (f": {problem}" if problem else ""))
    if ran_only and not_run:
        write(f"{not_run} entr{'y' if not_run == 1 else 'ies'} whose tests did not run here left out")
    write(f"{failed} entr{'y' if failed == 1 else 'ies'} failed the check")
    return 1 if failed else 0
