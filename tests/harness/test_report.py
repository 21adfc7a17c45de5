"""The conformance matrix: one cell per (property, implementation), worst outcome wins."""
from types import SimpleNamespace

from ortcheck.report import ConformanceMatrix, ResultCollector


def report(nodeid, impl, when="call", outcome="passed", **extra):
    fields = dict(nodeid=nodeid, when=when, outcome=outcome, passed=outcome == "passed", skipped=outcome == "skipped",
                  failed=outcome == "failed", user_properties=[("ortcheck_impl", impl)], longrepr=None,
                  longreprtext="boom\nAssertionError: x")
    return SimpleNamespace(**{**fields, **extra})


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


def _skipped(nodeid, impl, reason):
    return report(nodeid, impl, when="setup", outcome="skipped", longrepr=("file", 1, f"Skipped: {reason}"))


def test_properties_that_do_not_apply_show_once_per_family_as_na():
    outcomes = [_skipped(f"suites/t.py::test_fast[reference-{family}]", "reference", "n/a: reference lacks capability x")
                for family in ("sizes", "modes", "mixed")]
    outcomes += [_skipped("suites/t.py::test_gpu[reference]", "reference", "gpu test: run with --device cuda"),
                 report("suites/t.py::test_fast[eager-sizes]", "eager")]
    collector = ResultCollector()
    for r in outcomes:
        collector.pytest_runtest_logreport(r)
    matrix = ConformanceMatrix.from_outcomes_by_family(collector.outcomes)
    rows = {row[0]: row[1:] for row in matrix.rows()}
    assert rows["suites/t.py::test_fast[*]"] == ["-", "n/a"]
    assert rows["suites/t.py::test_gpu"] == ["-", "skip"]  # could run elsewhere: stays a skip
    assert rows["suites/t.py::test_fast[sizes]"] == ["pass", "-"]
    assert "n/a reference suites/t.py::test_fast[*]: reference lacks capability x" in matrix.notes()
    assert matrix.ok


def test_a_crashed_worker_report_is_attributed_to_its_implementation():
    crashed = report("suites/t.py::test_a[reference-core]", None, outcome="failed", user_properties=[])
    matrix = collect(crashed)
    assert matrix.rows() == [["suites/t.py::test_a[core]", "FAIL"]] and matrix.impls == ["reference"]


def test_a_refusal_is_its_own_cell_never_a_pass():
    """A pipeline refusing a behaviour by name passes the property as the contract allows, but the
    cell says ``refused`` (with the refusal) and the counts keep it apart from ``pass``, so a pipeline
    going from "supports" to "refuses" shows."""
    refused = report("suites/t.py::test_hooks[reference]", "reference",
                     user_properties=[("ortcheck_impl", "reference"), ("ortcheck_refused", "UnsupportedHookError: hook x")])
    matrix = collect(refused, report("suites/t.py::test_hooks[eager]", "eager"))
    assert matrix.rows() == [["suites/t.py::test_hooks", "pass", "refused"]]
    assert matrix.counts_by_impl()["reference"]["refused"] == 1 and matrix.counts_by_impl()["reference"]["pass"] == 0
    assert "refused reference suites/t.py::test_hooks: UnsupportedHookError: hook x" in matrix.notes()
    assert matrix.ok  # a refusal the contract allows fails nothing



def test_a_numeric_failure_carries_its_factor_over_the_bound():
    """The float64 oracle's "error E > bound B": nightly history compares E / B run by run."""
    line = "output[0]: 1.5 where float64 eager gives 1.0 (...); implementation error 0.5 > bound 0.1 = 32 x max(...)"
    numeric = report("suites/t.py::test_a[reference]", "reference", outcome="skipped", wasxfail="[manifest] known",
                     user_properties=[("ortcheck_impl", "reference"), ("ortcheck_failure", ("OracleError", line))])
    other = report("suites/t.py::test_b[reference]", "reference", outcome="failed",
                   user_properties=[("ortcheck_impl", "reference"), ("ortcheck_failure", ("RuntimeError", "no kernel"))])
    collector = ResultCollector()
    for r in (numeric, other, report("suites/t.py::test_c[reference]", "reference")):
        collector.pytest_runtest_logreport(r)
    assert [(o.status, o.factor) for o in collector.outcomes] == [("expected-fail", 5.0), ("fail", None), ("pass", None)]
