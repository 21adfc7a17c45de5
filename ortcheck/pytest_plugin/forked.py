"""A test whose manifest entry records a crash runs its call in a forked child of the process running
tests, so the crash costs the child, not the process: a replaced xdist worker starts over (ORTModule's
stack imported, the suites collected: ~11 s on 2 cores, for each of ORTModule's ~20 recorded crashes),
and pytest without xdist would end there. The setup and teardown stay in the process; what the call
ends in comes back as its own outcome (:func:`call`). On the CPU only, where ``fork`` exists: a
process that used CUDA cannot be forked safely (``ortcheck/usercheck/isolated.py``)."""
from __future__ import annotations

import dataclasses
import os
import traceback

import pytest

from ortcheck.pytest_plugin import timebound
from ortcheck.pytest_plugin.manifests import FINDING_KEY

UNBOUNDED = 7 * 24 * 3600.0  # seconds a child of a test without a time bound is waited for


def runs_forked(item) -> bool:
    """Whether ``item``'s manifest entry records a crash, and it can run in a child here."""
    finding = item.stash.get(FINDING_KEY, None)
    return (finding is not None and finding.failure.accepts_crash() and hasattr(os, "fork")
            and getattr(item.config, "ortcheck_device", "cpu") == "cpu")


def call(item, runtest) -> None:
    """``runtest()`` in a child; its exception (or pytest's skip, xfail, fail) raised here as its own,
    its death as :class:`~ortcheck.usercheck.isolated.Crashed` (a ``crash`` to the manifest). Past the
    test's time bound it is killed; the watchdog, timing from the setup, usually ends the process
    first, and the child dies with it."""
    from ortcheck.usercheck import isolated  # imports torch: only where a test runs forked

    outcome = isolated.isolated(outcome_of, runtest, name=item.nodeid, timeout=timebound.bound_of(item) or UNBOUNDED)
    if isinstance(outcome, PytestOutcome):
        outcome.raise_here()
    elif outcome is not None:
        raise outcome


@dataclasses.dataclass
class PytestOutcome:
    """pytest's skip, xfail or fail, as they cross the pipe: their classes pickle under no importable name."""
    kind: str
    message: str
    pytrace: bool = True

    def raise_here(self):
        if self.kind == "skip":
            pytest.skip(self.message)
        if self.kind == "xfail":
            pytest.xfail(self.message)
        pytest.fail(self.message, pytrace=self.pytrace)


def outcome_of(runtest, *args) -> BaseException | PytestOutcome | None:
    """In the child: None when ``runtest(*args)`` passed, else its outcome; an exception with the
    child's traceback as a note, since the parent raises it anew."""
    try:
        runtest(*args)
    except (pytest.skip.Exception, pytest.fail.Exception) as outcome:  # xfail's is fail's subclass
        kind = "xfail" if isinstance(outcome, pytest.xfail.Exception) else (
            "skip" if isinstance(outcome, pytest.skip.Exception) else "fail")
        return PytestOutcome(kind, outcome.msg or "", outcome.pytrace)
    except BaseException as outcome:  # noqa: BLE001 - every outcome goes back to the parent
        from ortcheck.usercheck import isolated

        outcome.add_note("raised in the test's forked child:\n" + "".join(_test_frames(outcome.__traceback__)))
        return isolated.carried(outcome)
    return None


def _test_frames(tb) -> list[str]:
    """The traceback's frames below pytest's and pluggy's calling machinery, formatted."""
    frames = [frame for frame in traceback.extract_tb(tb)
              if not any(part in frame.filename for part in ("/_pytest/", "/pluggy/", __file__))]
    return traceback.StackSummary.from_list(frames).format()
