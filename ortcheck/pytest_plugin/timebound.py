"""Per-test time bounds, enforced by ``ortcheck.pytest_plugin.watchdog`` from outside the test process.

The plugin gives every property that runs implementation code a bound (``--impl-timeout``). In the
process that runs tests (an xdist worker, or pytest itself without xdist), :class:`BoundedTests`
tells that process's watchdog when each bounded test starts and ends and what hypothesis drew for
each example, so a kill names the draw the test was stuck on. On the xdist controller,
:class:`CrashRecords` gives the workers one records folder and turns a worker crash the watchdog
caused into a failure that says so: the property, the bound, the draw and the replay command.
"""
from __future__ import annotations

import contextlib
import functools
import shutil
import tempfile
from pathlib import Path

import pytest

from ortcheck import seed
from ortcheck.pytest_plugin import run_folder, watchdog

_BOUND_KEY = pytest.StashKey[float]()
RECORDS_KEY = "ortcheck_watchdog_records"
ARG_CHARS = 300


def bound(item, seconds: float) -> None:
    """Give ``item`` a time bound of ``seconds`` (from the start of its setup to the end of its teardown)."""
    item.stash[_BOUND_KEY] = seconds


def bound_of(item) -> float | None:
    """``item``'s time bound in seconds; None when it has none."""
    return item.stash.get(_BOUND_KEY, None)


def is_xdist_controller(config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")


def plugin_for(config):
    """The plugin object for this process: the controller's, or the one of a process running tests."""
    if is_xdist_controller(config):
        return CrashRecords()
    return BoundedTests(config, run_folder.given_to(config, RECORDS_KEY))


class BoundedTests:
    """Where tests run: one watchdog process (started at the first bounded test), told what runs."""

    def __init__(self, config, records: Path | None):
        """``records``: the controller's folder; None without xdist (a folder of our own, and the
        watchdog writes what it ended to stderr, since no controller will)."""
        self.config = config
        self.own_records = records is None
        self.records = Path(tempfile.mkdtemp(prefix="ortcheck-watchdog-")) if records is None else records
        self.watchdog: watchdog.Watchdog | None = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        seconds = bound_of(item)
        if not seconds:
            yield
            return
        if self.watchdog is None:
            self.watchdog = watchdog.Watchdog(self.records, announce=self.own_records)
        self.watchdog.start(item.nodeid, seconds, f"pytest '{item.nodeid}' {seed.replay_options(self.config)}")
        with _draws_told(item, self.watchdog):
            yield
        self.watchdog.end()

    def pytest_unconfigure(self, config) -> None:
        if self.watchdog is not None:
            self.watchdog.close()
        if self.own_records:
            shutil.rmtree(self.records, ignore_errors=True)


@contextlib.contextmanager
def _draws_told(item, told: watchdog.Watchdog):
    """Tell the watchdog each example's drawn arguments while ``item`` runs, if it is a hypothesis test.

    Hypothesis calls ``test.hypothesis.inner_test`` once per example with the drawn arguments and
    the fixtures as keyword arguments; the replacement is documented for wrapping its execution."""
    hypothesis = getattr(getattr(item, "obj", None), "hypothesis", None)
    if hypothesis is None:
        yield
        return
    inner = hypothesis.inner_test

    @functools.wraps(inner)  # hypothesis derandomizes from the test's source, which __wrapped__ keeps
    def telling(*args, **kwargs):
        fixtures = getattr(item, "funcargs", {})  # filled during setup
        told.draw(", ".join(f"{name}={_short(value)}" for name, value in kwargs.items() if name not in fixtures))
        return inner(*args, **kwargs)

    hypothesis.inner_test = telling
    try:
        yield
    finally:
        hypothesis.inner_test = inner


def _short(value) -> str:
    try:
        text = repr(value)
    except Exception as error:  # a draw whose repr fails still names its type
        text = f"<{type(value).__name__}: repr failed: {error!r}>"
    return text if len(text) <= ARG_CHARS else text[:ARG_CHARS] + "..."


class CrashRecords(run_folder.RunFolder):
    """The xdist controller: the workers' shared records folder; a watchdog's kill explained in the report."""

    def __init__(self):
        super().__init__(RECORDS_KEY, "ortcheck-watchdog-")

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem, report, sched) -> None:
        record = watchdog.read_record(self.folder, crashitem)
        if record is not None:  # last line: the one the report's matrix cell shows
            report.longrepr = "\n".join(filter(None, [str(report.longrepr), record["stacks"],
                                                      watchdog.describe(record)]))
