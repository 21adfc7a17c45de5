"""Hangs and crashes cost one property, never the run: every property that runs implementation code
gets a time bound kept from outside the process (``ortcheck/pytest_plugin/timebound.py``); xdist replaces every
crashed worker, a crash the manifest expects is that expected failure, and a run in which a
collected test never reported fails.

A test whose manifest entry records a crash runs in a forked child of its process
(``ortcheck/pytest_plugin/forked.py``): the crash costs the child, not the worker."""
from __future__ import annotations

import functools

import pytest

from ortcheck import profiles
from ortcheck.findings import failures, manifest
from ortcheck.pytest_plugin import forked, timebound
from ortcheck.pytest_plugin.manifests import NOT_AS_RECORDED, NOT_AS_RECORDED_PROPERTY, active_findings
from ortcheck.report.collector import impl_of

MAX_WORKER_RESTARTS = 1000
_REPORTED_KEY = pytest.StashKey[set]()


def pytest_configure(config):
    if getattr(config.option, "maxworkerrestart", "unset") is None:
        # xdist's default stops replacing crashed workers after 4 per worker and then silently
        # leaves the rest of their tests unrun; here a crash is a finding, and ORTModule has more
        # than 8 of them.
        config.option.maxworkerrestart = str(MAX_WORKER_RESTARTS)
    config.pluginmanager.register(timebound.plugin_for(config), "ortcheck-time-bound")
    if timebound.is_xdist_controller(config):
        config.stash[_REPORTED_KEY] = set()
        config.pluginmanager.register(_ReportedTests(config.stash[_REPORTED_KEY]), "ortcheck-reported-tests")


def pytest_collection_modifyitems(config, items):
    """Bound every test of an implementation (a hang may hold the GIL: ``ortcheck/pytest_plugin/watchdog.py``)."""
    timeout = _impl_timeout(config)
    if not timeout:
        return
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec and callspec.params.get("impl"):
            timebound.bound(item, timeout)


def _impl_timeout(config) -> float | None:
    value = config.getoption("impl_timeout")
    if value is None:
        return profiles.default_timeout()
    if value < 0:
        raise pytest.UsageError(f"--impl-timeout must be >= 0 seconds (0: no bound), got {value:g}")
    return value or None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """The call of a test recorded as crashing runs in a forked child (the module docstring)."""
    if not forked.runs_forked(item):
        yield
        return
    item.runtest = functools.partial(forked.call, item, item.runtest)
    try:
        yield
    finally:
        del item.runtest


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    """Under xdist every collected test must have reported: a crash beyond the worker restarts
    would otherwise end the run green with tests never run."""
    reported = session.config.stash.get(_REPORTED_KEY, None)
    if reported is None or exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        return
    missing = session.testscollected - len(reported)
    if missing > 0:
        session.config.get_terminal_writer().line(
            f"ortcheck: {missing} of {session.testscollected} collected tests never reported (crashed workers "
            f"beyond --max-worker-restart?)", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


class _ReportedTests:
    """The xdist controller's set of tests that reported (for :func:`pytest_sessionfinish`)."""

    def __init__(self, reported: set):
        self.reported = reported

    def pytest_runtest_logreport(self, report):
        self.reported.add(report.nodeid)


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem, report, sched):
    """xdist: a worker died running ``crashitem``. When the implementation's manifest expects that
    property to fail, the crash is its expected failure (native crashes are findings too); otherwise
    the report stays a failure naming the property."""
    impl_name = impl_of(crashitem)
    finding = manifest.first_match(active_findings(sched.config, impl_name)[0], crashitem) if impl_name else None
    report.user_properties.append((failures.FAILURE_PROPERTY, (failures.CRASH, "")))
    if finding and finding.failure.accepts_crash():
        report.outcome = "skipped"
        report.wasxfail = f"[{impl_name} manifest] {finding.label} (the worker crashed)"
    elif finding:
        report.user_properties.append((NOT_AS_RECORDED_PROPERTY, f"{NOT_AS_RECORDED}the worker crashed "
                                                                 f"(recorded: {finding.failure})"))
