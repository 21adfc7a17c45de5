"""The watchdog process alone, the hang it is for, and the draws it is told (ortcheck/pytest_plugin/watchdog.py, timebound.py)."""
import textwrap
import threading
import time
import types

from hypothesis import given, strategies as st
from hypothesis.internal.reflection import function_digest

from ortcheck.pytest_plugin import timebound, watchdog
from controls.crashes import hold_the_gil


def _longest_pause_of_a_python_thread_during(call) -> float:
    stamps, done = [], threading.Event()

    def spin():
        while not done.is_set():
            stamps.append(time.monotonic())

    thread = threading.Thread(target=spin)
    thread.start()
    time.sleep(0.05)
    call()
    done.set()
    thread.join()
    return max(b - a for a, b in zip(stamps, stamps[1:]))


def test_the_deliberate_hang_holds_the_gil():
    """No other thread runs during ``hold_the_gil``, as none ran in the worker stuck in run_backward
    (pytest-timeout's timer included); a sleep that releases the GIL lets it run."""
    assert _longest_pause_of_a_python_thread_during(lambda: hold_the_gil(1)) > 0.9
    assert _longest_pause_of_a_python_thread_during(lambda: time.sleep(1)) < 0.5


WATCHED = """
    import sys, time
    from pathlib import Path
    from ortcheck.pytest_plugin import watchdog
    from controls.crashes import hold_the_gil

    dog = watchdog.Watchdog(Path(sys.argv[1]), announce=False)
    dog.start("t.py::test_in_time", 1.0, "pytest 't.py::test_in_time'")
    dog.draw("n=1")
    dog.end()
    time.sleep(2)  # past the first test's bound: ended in time, so not killed
    print("survived; stuck from", time.monotonic(), flush=True)
    dog.start("t.py::test_stuck", 1.0, "pytest 't.py::test_stuck' --hypothesis-seed=7")
    dog.draw("n=1")
    dog.draw("n=2")
    while True:
        hold_the_gil(3600)
"""


def test_the_watchdog_kills_only_a_test_past_its_bound_and_records_what_it_killed(python, tmp_path):
    result = python.run("-c", textwrap.dedent(WATCHED), str(tmp_path), timeout=60)
    stuck = time.monotonic() - float(result.stdout.split("survived; stuck from ")[1])  # one clock for all processes
    assert result.returncode == -watchdog.DUMP_SIGNAL, result.stderr
    assert 1.0 <= stuck < 1.0 + 2.0, stuck  # killed at the bound, by the dump signal (no grace needed)
    assert watchdog.read_record(tmp_path, "t.py::test_in_time") is None
    record = watchdog.read_record(tmp_path, "t.py::test_stuck")
    assert (record["nodeid"], record["bound"], record["draw"], record["examples"]) == ("t.py::test_stuck", 1.0, "n=2", 2)
    assert "in hold_the_gil" in record["stacks"]
    assert watchdog.describe(record).endswith("last draw (example 2): n=2; replay: pytest 't.py::test_stuck' "
                                              "--hypothesis-seed=7")


def test_draws_are_told_without_changing_what_hypothesis_draws(tmp_path):
    """The wrapper keeps the test's source (``__wrapped__``), from which a derandomized run seeds itself."""
    @given(n=st.integers(0, 9))
    def test_property(n):
        pass

    told = []
    item = types.SimpleNamespace(obj=test_property, funcargs={})
    digest = function_digest(test_property.hypothesis.inner_test)
    with timebound._draws_told(item, types.SimpleNamespace(draw=told.append)):
        assert function_digest(test_property.hypothesis.inner_test) == digest
        test_property()
    assert told and all(text.startswith("n=") for text in told)
    assert function_digest(test_property.hypothesis.inner_test) == digest
