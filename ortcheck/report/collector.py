"""A pytest plugin object that records one outcome per (property, implementation)."""
from __future__ import annotations

import dataclasses
import re

from ortcheck import seed
from ortcheck.findings import failures

_PARAMS = re.compile(r"\[(.*)\]$")
# worst first: a property's cell shows the worst outcome among its parametrized items. "refused":
# it passed, but the implementation refused (by name, as the contract allows) part of what the
# property checks: never counted as a pass, so "supports" turning into "refuses" shows in the
# matrix. "n/a": the property does not apply to the implementation (a capability it lacks); "skip":
# it could run elsewhere (a GPU, --nightly, the implementation's own environment).
SEVERITY = ("fail", "error", "expected-fail", "refused", "pass", "skip", "n/a")
STATUSES = ("pass", "refused", "fail", "error", "expected-fail", "skip", "n/a")  # the order reports list them in
NOT_APPLICABLE = "n/a: "
REFUSED = "ortcheck_refused"  # the user property a test sets (the refusal's first line) when the implementation refused


@dataclasses.dataclass(frozen=True)
class Outcome:
    property: str
    impl: str
    status: str  # one of SEVERITY
    detail: str = ""
    factor: float | None = None  # a numeric failure's error over the oracle's bound (nightly history compares it)


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
        self.memory_plans: list[dict] = []  # memory-optimizer plan tables the recompute suite attached
        self.hypothesis: dict = {}  # the run's seed, so the report says how to replay it

    def pytest_configure(self, config):
        self.hypothesis = {"hypothesis": seed.describe(config), "hypothesis_seed": seed.of(config)}

    def pytest_runtest_logreport(self, report):
        status = _status(report)
        if status is None:
            return
        properties = dict(report.user_properties)
        if "convergence_parity" in properties:
            self.convergence.append({"test": report.nodeid, "status": status, **properties})
        if "memory_plans" in properties:
            self.memory_plans.append({"test": report.nodeid, "table": properties["memory_plans"]})
        impl = properties.get("ortcheck_impl") or impl_of(report.nodeid) or "-"
        prop = split_nodeid(report.nodeid, impl)
        if status == "pass" and REFUSED in properties:
            status, detail = "refused", properties[REFUSED]
        else:  # the matrix says why
            detail = properties.get("ortcheck_not_as_recorded") or _detail(report, status)
        _, line = properties.get(failures.FAILURE_PROPERTY) or (None, "")
        self.outcomes.append(Outcome(prop, impl, status, detail, failures.numeric_factor(line)))


def _status(report) -> str | None:
    """One status per test item: its call phase, or the setup/teardown phase that did not pass."""
    if report.passed and report.when != "call":
        return None
    if hasattr(report, "wasxfail"):
        return "expected-fail" if report.skipped else "fail"  # a strict XPASS arrives as failed
    if report.passed:
        return "pass"
    if report.skipped:
        return "n/a" if _skip_reason(report).startswith(NOT_APPLICABLE) else "skip"
    return "fail" if report.when == "call" else "error"


def _detail(report, status: str) -> str:
    if status == "expected-fail":
        return report.wasxfail
    if status in ("skip", "n/a"):
        return _skip_reason(report).removeprefix(NOT_APPLICABLE)
    if status in ("fail", "error"):
        return report.longreprtext.strip().splitlines()[-1][:200] if report.longreprtext else status
    return ""


def _skip_reason(report) -> str:
    return report.longrepr[2].removeprefix("Skipped: ") if isinstance(report.longrepr, tuple) else ""


def impl_of(nodeid: str) -> str | None:
    """The implementation a node id is parametrized with, for reports that carry no properties
    (xdist's report of a crashed worker); None when there is none."""
    from ortcheck import impls

    match = _PARAMS.search(nodeid)
    ids = match.group(1).split("-") if match else []
    return next((i for i in ids if i in impls.names()), None)
