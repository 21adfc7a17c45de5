"""`ortcheck findings --check` counts every way an entry's examples can fail, a crashed worker included."""
from types import SimpleNamespace

from ortcheck.findings import manifest
from ortcheck.findings.failures import FailurePattern
from ortcheck.findings.prove import Collector

NODE = "suites/test_nn_layers.py::test_layer_matches_eager[ortmodule-MaxPool1d]"


def _collector(raises: str) -> Collector:
    finding = manifest.Finding(NODE.replace("[", "[[]"), "crashes", "x", "ortmodule.toml: finding #1",
                               examples=("(x,)",), failure=FailurePattern.parse({"raises": raises}))
    return Collector({"ortmodule": [finding]})


def _crash_report(**extra):
    """What xdist hands the controller for a worker that died: no properties of the item."""
    fields = dict(nodeid=NODE, when="???", outcome="skipped", passed=False, skipped=True, failed=False,
                  user_properties=[("ortcheck_failure", ("crash", ""))], longrepr=None, longreprtext="")
    return SimpleNamespace(**{**fields, **extra})


def test_a_crash_recorded_as_the_finding_proves_it():
    collector = _collector("crash")
    collector.pytest_runtest_logreport(_crash_report(wasxfail="[ortmodule manifest] crashes (the worker crashed)"))
    (verdict,) = collector.verdicts.values()
    assert verdict.statuses == {NODE: "xfail"} and verdict.problem() is None


def test_a_crash_not_recorded_fails_the_entry():
    collector = _collector("RuntimeError")
    report = _crash_report(outcome="failed", skipped=False, failed=True, longrepr="worker crashed")
    report.user_properties.append(("ortcheck_not_as_recorded", "failed, but not as recorded: the worker crashed"))
    collector.pytest_runtest_logreport(report)
    (verdict,) = collector.verdicts.values()
    assert verdict.statuses == {NODE: "fail"} and "not as recorded" in verdict.problem()
