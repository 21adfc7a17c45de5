"""A test recorded as crashing runs in a forked child (``ortcheck/pytest_plugin/forked.py``): whatever
its call ends in comes back to the process running tests as its own outcome (end to end, through
pytester: ``tests/harness/test_plugin.py``)."""
import os
import signal

import pytest

from ortcheck.findings.failures import FailurePattern
from ortcheck.pytest_plugin.forked import outcome_of
from ortcheck.usercheck.isolated import Crashed, isolated


def _fails_twice():
    raise ExceptionGroup("hypothesis found 2 distinct failures", [ValueError("first"), KeyError("second")])


def test_a_call_that_passes_comes_back_as_none():
    assert isolated(outcome_of, lambda: None, name="the test") is None


def test_an_exception_comes_back_as_itself_with_the_childs_traceback():
    outcome = isolated(outcome_of, _fails_twice, name="the test")
    assert type(outcome) is ExceptionGroup and [type(e) for e in outcome.exceptions] == [ValueError, KeyError]
    assert "raised in the test's forked child:" in outcome.__notes__[0] and "_fails_twice" in outcome.__notes__[0]


@pytest.mark.parametrize("say, message, expected", [
    (pytest.skip, "n/a: no such capability", pytest.skip.Exception),
    (pytest.xfail, "known", pytest.xfail.Exception),
    (pytest.fail, "said so", pytest.fail.Exception),
])
def test_pytests_own_outcomes_are_raised_anew_in_the_parent(say, message, expected):
    """Their classes pickle under no importable name (``__module__`` is builtins)."""
    outcome = isolated(outcome_of, say, message, name="the test")
    with pytest.raises(expected) as raised:
        outcome.raise_here()
    assert type(raised.value) is expected and raised.value.msg == message


def test_a_child_that_dies_is_the_crash_a_manifest_records():
    with pytest.raises(Crashed, match=r"signal SIGSEGV") as died:
        isolated(outcome_of, lambda: os.kill(os.getpid(), signal.SIGSEGV), name="the test")
    assert FailurePattern.parse({"raises": "crash"}).accepts(died.value)
