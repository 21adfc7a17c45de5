"""Expected failures: each implementation's manifest entries holding on this machine turn the tests
they match into strict expected failures, which must fail as recorded (type, first line); a
manifest's ``examples`` run first (``manifest_examples``); ``--findings-check`` runs only them, and
``--prove-findings`` runs them so within the whole run and judges the entries at its end."""
from __future__ import annotations

import pytest

from ortcheck import impls, profiles
from ortcheck.findings import failures, manifest, prove
from ortcheck.findings.drafts import FindingDrafts

FINDING_KEY = pytest.StashKey[manifest.Finding]()
_UNMATCHED_KEY = pytest.StashKey[list]()
_INACTIVE_KEY = pytest.StashKey[list]()
NOT_AS_RECORDED = "failed, but not as recorded: "
NOT_AS_RECORDED_PROPERTY = "ortcheck_not_as_recorded"


def pytest_configure(config):
    if config.getoption("collect_findings") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(FindingDrafts(config.getoption("collect_findings")), "ortcheck-finding-drafts")
    if config.getoption("prove_findings") and not config.getoption("findings_check") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(InRunProof(config), "ortcheck-in-run-proof")


def proving(config) -> bool:
    """Whether expected failures run their entry's examples alone (``--findings-check``, ``--prove-findings``)."""
    return config.getoption("findings_check") or config.getoption("prove_findings")


class InRunProof:
    """``--prove-findings`` where every report arrives (xdist's controller, or pytest alone): the entries
    whose tests ran are judged as ``ortcheck findings --check`` judges them, and a failing one fails the run."""

    def __init__(self, config):
        self.config = config
        self.collector: prove.Collector | None = None
        self.lines: list[str] = []

    def pytest_sessionstart(self, session):
        """The active findings, once the options have chosen the implementations."""
        findings = {name: active_findings(self.config, name)[0] for name in self.config.ortcheck_impls}
        self.collector = prove.Collector({name: entries for name, entries in findings.items() if entries})

    def pytest_runtest_logreport(self, report):
        self.collector.pytest_runtest_logreport(report)

    def pytest_sessionfinish(self, session):
        failed = prove.report(self.collector.verdicts.values(), self.config.ortcheck_device, self.lines.append,
                              ran_only=True)
        if failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        terminalreporter.section("ortcheck: the findings whose tests ran, proving themselves")
        for line in self.lines:
            terminalreporter.write_line(line)


def active_findings(config, impl_name: str) -> tuple[list[manifest.Finding], list[manifest.Finding]]:
    """(the findings of ``impl_name``'s manifest that hold on this machine and stack, those that don't)."""
    loaded = manifest.load(impls.get(impl_name).manifest_path())
    active = [finding for finding in loaded if finding.active_on(config.ortcheck_machine)]
    return active, [finding for finding in loaded if finding not in active]


def pytest_collection_modifyitems(config, items):
    split = {name: active_findings(config, name) for name in config.ortcheck_impls}
    findings = {name: active for name, (active, _) in split.items()}
    config.stash[_INACTIVE_KEY] = [(name, f) for name, (_, inactive) in split.items() for f in inactive]
    matched = set()
    for item in items:
        callspec = getattr(item, "callspec", None)
        impl_name = callspec.params.get("impl") if callspec else None
        finding = manifest.first_match(findings.get(impl_name, []), item.nodeid)
        if finding:
            matched.add(finding)
            item.stash[FINDING_KEY] = finding
            item.add_marker(pytest.mark.xfail(strict=True, reason=f"[{impl_name} manifest] {finding.label}"))
    if config.getoption("findings_check"):
        _keep_only_findings(config, items)
    collected_files = {item.nodeid.split("::")[0] for item in items}
    config.stash[_UNMATCHED_KEY] = [
        (name, f) for name, entries in findings.items() for f in entries
        if f not in matched and any(pattern.split("::")[0] in collected_files for pattern in f.patterns)
    ]


def _keep_only_findings(config, items) -> None:
    """``--findings-check``: deselect every test no active manifest entry expects to fail."""
    kept = [item for item in items if FINDING_KEY in item.stash]
    deselected = [item for item in items if FINDING_KEY not in item.stash]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
    items[:] = kept


@pytest.fixture
def manifest_examples(request) -> tuple[str, ...]:
    """Known failing inputs the implementation's manifest lists for this test (Python expressions):
    a suite runs them before drawing its own, so a recorded finding fails on every run."""
    finding = request.node.stash.get(FINDING_KEY, None)  # matched once, at collection
    return finding.examples if finding else ()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """An expected failure, and every test under ``--no-shrink``, runs without hypothesis' shrink and
    explain phases.

    A manifest entry already holds the minimal reproduction, and shrinking a failing sequence of
    exports costs minutes per run; the test must still fail (strict), just without the search.
    Under ``--findings-check`` and ``--prove-findings`` an expected failure runs its entry's examples
    alone (no draws) unless the entry says its property fails on every draw: then its first draw is the proof.
    """
    expected = item.get_closest_marker("xfail") is not None
    if not expected and not item.config.getoption("no_shrink"):
        yield
        return
    finding = item.stash.get(FINDING_KEY, None)
    alone = expected and proving(item.config) and finding is not None and not finding.every_draw
    test = getattr(item, "obj", None)
    test = getattr(test, "__func__", test)  # a method's @given function
    with profiles.examples_only(test) if alone else profiles.without_shrinking(test):
        yield


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Every failure carries its type and first line (drafts and the findings check read them); an
    expected failure that fails otherwise than its manifest entry recorded is a FAIL saying so.

    An expected failure that fails as recorded gets Python's own traceback (``--tb=native``) for the
    report nobody reads: pytest's long form parses the whole source file of every frame, anew for
    each report (torch's 24,000-line OpInfo table, hypothesis' core), 0.4 s per expected failure, a
    fifth of an OpInfo run. A failure of any other kind keeps the form the user asked for.

    tryfirst: this wrapper's code after ``yield`` runs after pytest's xfail handling has decided."""
    error = call.excinfo.value if call.excinfo else None
    finding = item.stash.get(FINDING_KEY, None)
    as_recorded = finding is not None and error is not None and finding.failure.accepts(error)
    brief = as_recorded and call.when == "call" and not item.config.option.runxfail
    if brief:
        item.repr_failure = _native_traceback
    try:
        report = yield
    finally:
        if brief:
            del item.repr_failure
    if error is None or not (report.failed or hasattr(report, "wasxfail")):
        return report
    report.user_properties.append((failures.FAILURE_PROPERTY, (failures.kind(error), failures.first_line(error))))
    if finding and report.skipped and hasattr(report, "wasxfail") and not as_recorded:
        _not_as_recorded(report, finding, failures.describe(error))
    return report


def _native_traceback(excinfo):
    return excinfo.getrepr(style="native")


def _not_as_recorded(report, finding: manifest.Finding, what: str) -> None:
    """Turn an expected failure of the wrong kind into a failure naming what happened and what was recorded."""
    del report.wasxfail
    report.outcome = "failed"
    message = NOT_AS_RECORDED + what
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        crash.message = message  # pytest's short summary line
    report.sections.append(("ortcheck manifest", f"{message}\nrecorded ({finding.source}): {finding.failure}\n"
                                                 f"reason: {finding.reason}"))
    report.user_properties.append((NOT_AS_RECORDED_PROPERTY, message[:300]))


def pytest_terminal_summary(terminalreporter, config):
    unmatched = config.stash.get(_UNMATCHED_KEY, [])
    if unmatched:
        terminalreporter.section("ortcheck: manifest entries matching no collected test")
        for impl_name, finding in unmatched:
            terminalreporter.write_line(f"{impl_name}: {', '.join(finding.patterns)}  ({finding.source})")
    inactive = config.stash.get(_INACTIVE_KEY, [])
    if inactive:
        terminalreporter.section("ortcheck: manifest entries that don't hold on this machine (their tests must pass)")
        for impl_name, finding in inactive:
            terminalreporter.write_line(f"{impl_name}: {', '.join(finding.patterns)}  where: {finding.condition}")
