"""The conformance matrix: one cell per (property, implementation), worst outcome wins."""
from types import SimpleNamespace

from ortcheck.report import ConformanceMatrix, ResultCollector


def report(nodeid, impl, when="call", outcome="passed", **extra):
    return SimpleNamespace(nodeid=nodeid, when=when, outcome=outcome, passed=outcome == "passed",
                           skipped=outcome == "skipped", failed=outcome == "failed",
                           user_properties=[("ortcheck_impl", impl)], longrepr=None, longreprtext="boom\nAssertionError: x", **extra)


def collect(*reports):
    collector = ResultCollector()
    for r in reports:
        collector.pytest_runtest_logreport(r)
    return ConformanceMatrix.from_outcomes(collector.outcomes)


def test_cells_per_property_and_impl_with_reasons():
    matrix = collect(
        report("suites/t.py::test_a[eager-core]", "eager"),
        report("suites/t.py::test_a[ortmodule-core]", "ortmodule", outcome="skipped", wasxfail="[manifest] known"),
        report("suites/t.py::test_b[ortmodule]", "ortmodule", when="setup", outcome="skipped"),
        report("suites/t.py::test_b[eager]", "eager", outcome="failed"),
    )
    assert matrix.rows() == [["suites/t.py::test_a[core]", "pass", "xfail"], ["suites/t.py::test_b", "FAIL", "skip"]]
    assert not matrix.ok
    assert any("xfail ortmodule suites/t.py::test_a[core]: [manifest] known" == note for note in matrix.notes())


def test_worst_outcome_wins_and_setup_passes_are_ignored():
    matrix = collect(
        report("suites/t.py::test_a[eager]", "eager", when="setup"),
        report("suites/t.py::test_a[eager]", "eager"),
        report("suites/t.py::test_a[eager]", "eager", when="teardown", outcome="failed"),
    )
    assert matrix.rows() == [["suites/t.py::test_a", "ERROR"]]


def test_strict_xpass_is_a_failure():
    matrix = collect(report("suites/t.py::test_a[eager]", "eager", outcome="failed", wasxfail="claimed"))
    assert matrix.rows() == [["suites/t.py::test_a", "FAIL"]] and not matrix.ok


def test_an_empty_run_is_not_ok():
    assert not collect().ok
