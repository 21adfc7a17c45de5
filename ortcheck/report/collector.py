"""A pytest plugin object that records one outcome per (property, implementation)."""
from __future__ import annotations

import dataclasses
import re

_PARAMS = re.compile(r"\[(.*)\]$")
# worst first: a property's cell shows the worst outcome among its parametrized items
SEVERITY = ("fail", "error", "expected-fail", "pass", "skip")


@dataclasses.dataclass(frozen=True)
class Outcome:
    property: str
    impl: str
    status: str  # one of SEVERITY
    detail: str = ""


def split_nodeid(nodeid: str, impl: str) -> str:
    """The property a test item checks: its node id without the implementation's parameter id."""
    match = _PARAMS.search(nodeid)
    if not match:
        return nodeid
    ids = match.group(1).split("-")
    if impl in ids:
        ids.remove(impl)
    base = nodeid[: match.start()]
    return f"{base}[{'-'.join(ids)}]" if ids else base


class ResultCollector:
    def __init__(self):
        self.outcomes: list[Outcome] = []
        self.convergence: list[dict] = []  # user properties of convergence tests (reports, deviations)

    def pytest_runtest_logreport(self, report):
        status = _status(report)
        if status is None:
            return
        properties = dict(report.user_properties)
        if "convergence_parity" in properties:
            self.convergence.append({"test": report.nodeid, "status": status, **properties})
        impl = properties.get("ortcheck_impl", "-")
        prop = split_nodeid(report.nodeid, impl)
        self.outcomes.append(Outcome(prop, impl, status, _detail(report, status)))


def _status(report) -> str | None:
    """One status per test item: its call phase, or the setup/teardown phase that did not pass."""
    if report.passed and report.when != "call":
        return None
    if hasattr(report, "wasxfail"):
        return "expected-fail" if report.skipped else "fail"  # a strict XPASS arrives as failed
    if report.passed:
        return "pass"
    if report.skipped:
        return "skip"
    return "fail" if report.when == "call" else "error"


def _detail(report, status: str) -> str:
    if status == "expected-fail":
        return report.wasxfail
    if status == "skip" and isinstance(report.longrepr, tuple):
        return report.longrepr[2].removeprefix("Skipped: ")
    if status in ("fail", "error"):
        return report.longreprtext.strip().splitlines()[-1][:200] if report.longreprtext else status
    return ""
