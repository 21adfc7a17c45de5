"""The plugin end to end, through pytester: controls are caught, manifests are strict, bad options fail clearly."""
import dataclasses
import re
import shlex
import shutil
import textwrap
import types
from pathlib import Path

import pytest

import controls
from ortcheck.pytest_plugin import crashes, watchdog
from ortcheck.strategies import FEATURES

REPO = Path(__file__).resolve().parents[2]
ROUNDTRIP_TESTS = len(FEATURES) + 1  # test_roundtrip per feature, and the deep-nesting one


@pytest.fixture
def project(pytester):
    """A pytester folder holding the suites, the goldens and a conftest that registers the controls."""
    shutil.copytree(REPO / "suites", pytester.path / "suites")
    shutil.copytree(REPO / "golden", pytester.path / "golden")
    pytester.makeconftest(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO)!r})
        from ortcheck import impls
        import controls
        controls.register()
    """))
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    return pytester


def run(python, project, *args):
    return python.runpytest(project, "--hypothesis-profile", "dev", *args)


@pytest.mark.parametrize("control, test", controls.catches(), ids=[f"{c}-{t}" for c, t in controls.catches()])
def test_each_control_is_caught_by_the_tests_it_declares(python, project, control, test):
    """--no-shrink: caught is the first failing draw; shrinking it re-exports for minutes."""
    result = run(python, project, test, "--no-shrink", "--impl", control, *controls.get(control).run_with)
    result.assert_outcomes(failed=1)


@pytest.mark.parametrize("control", [name for name, cls in controls.CONTROLS.items() if cls.missed_by])
def test_each_control_passes_the_tests_it_declares_it_leaves_alone(python, project, control):
    """Where a property is specific (a wrong Where rule: layer stacks use Where only as masked_fill,
    its Y branch), the control passes the tests that do not look at its defect."""
    missed_by = controls.get(control).missed_by
    result = run(python, project, *missed_by, "--impl", control, *controls.get(control).run_with)
    result.assert_outcomes(passed=len(missed_by))


# suites whose controls live elsewhere, each with where and why
_CONTROLLED_ELSEWHERE = {
    "suites/test_convergence.py": "its gate's controls (learning rate 1% off, dropout at the wrong rate, a fallback "
                                  "to eager) run in process in tests/convergence/test_gate.py: a control "
                                  "implementation has no goldens, so the suite would fail it for that",
}


def test_every_suite_has_a_control_that_fails_it():
    """A property nothing has ever made fail proves nothing: each suite names at least one control."""
    suites = {f"suites/{path.name}" for path in (REPO / "suites").glob("test_*.py")}
    controlled = {test.split("::")[0] for _, test in controls.catches()} | set(_CONTROLLED_ELSEWHERE)
    assert not sorted(suites - controlled), "suites without a control in controls/"


def test_every_control_declares_what_catches_it_and_is_named_after_its_class():
    assert len(controls.CONTROLS) >= 20
    assert not [name for name, cls in controls.CONTROLS.items() if not cls.caught_by]
    assert not [name for name, cls in controls.CONTROLS.items() if name != controls.name_of(cls)]
    assert controls.name_of(controls.get("bnb4_grad_other_code_book")) == "bnb4_grad_other_code_book"
    with pytest.raises(ValueError, match="unknown control 'nonesuch'; valid: backward_overwrites_grads, "):
        controls.get("nonesuch")


def test_a_transition_failure_shrinks_to_a_replayable_script(python, project):
    """Over-exporting control: outputs stay right, the counter check fails, the shrunk sequence prints as code."""
    result = run(python, project, "suites/test_transitions.py::test_transitions[reexports_on_new_sizes-sizes]",
                 "--impl", "reexports_on_new_sizes")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*exports: observed 2, the transition contract predicts 1*",
        "*replay(impls.get('reexports_on_new_sizes'), Options(), [*",
        "*    Forward(),",
        "*    Forward(sizes='other'),",
        "*])",
    ])


def test_a_reference_with_one_graph_slot_fails_the_independent_contract(python, project):
    """Re-exporting on every train/eval switch: the contract, which shares nothing with reference, says no."""
    result = run(python, project, "suites/test_transitions.py::test_transitions[one_graph_slot-modes]",
                 "--impl", "one_graph_slot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*exports: observed *, the transition contract predicts *"])


def test_a_wrong_prediction_fails_the_counter_check():
    """The check compares, not echoes: a contract that ignores schema changes disagrees with reference."""
    from ortcheck import impls
    from ortcheck.impls import Options
    from ortcheck.stateful import Contract, Forward, Scenario

    class IgnoresSchemas(Contract):
        def _decide(self, call):
            built = self.built.get(call.training)
            return super()._decide(call if built is None else dataclasses.replace(call, signature=built.signature))

    scenario = Scenario(impls.get("reference"), Options(), IgnoresSchemas())
    scenario.apply(Forward())
    with pytest.raises(AssertionError, match="exports: observed 2, the transition contract predicts 1"):
        scenario.apply(Forward(rank=3))


def test_eager_passes_in_a_project_that_registers_the_controls(python, project):
    """The controls' registration leaves the real implementations alone. (Every suite against eager
    is the test command's own job: running them all again here took 4 of its 15 minutes.)"""
    result = run(python, project, "suites/test_io_roundtrip.py", "--impl", "eager")
    assert result.ret == 0
    assert result.parseoutcomes()["passed"] >= 5


def _manifest(project, control, body):
    path = project.path / f"{control}.toml"
    path.write_text(textwrap.dedent(body))
    project.makeconftest(project.path.joinpath("conftest.py").read_text() + textwrap.dedent(f"""
        from pathlib import Path
        controls.get({control!r}).manifest_path = lambda self: Path({str(path)!r})
    """))


ROUNDTRIP_CORE = "suites/test_io_roundtrip.py::test_roundtrip[[]clones_tensors-core]"


def _copies_entry(test: str, failure: str = 'raises = "AssertionError"') -> str:
    """A manifest entry recording clones_tensors' failure on ``test`` (a glob) as ``failure`` (its
    ``raises``/``match`` lines: the real one by default)."""
    return f"""
        [[finding]]
        test = "{test}"
        reason = "unflatten returns copies"
        {failure.replace(chr(10), chr(10) + "        ")}
        reproduction = "impl.unflatten(*impl.flatten([t]))[0] is not t"
    """


def test_manifest_entry_turns_a_known_failure_into_xfail_and_reports_unmatched(python, project):
    _manifest(project, "clones_tensors", _copies_entry("suites/test_io_roundtrip.py::test_roundtrip*") + """
        [[finding]]
        test = "suites/test_io_roundtrip.py::test_no_such_property*"
        reason = "stale"
        match = "stale"
        reproduction = "none"
    """)
    result = run(python, project, "suites/test_io_roundtrip.py", "--impl", "clones_tensors", "-rx")
    result.assert_outcomes(xfailed=ROUNDTRIP_TESTS)
    result.stdout.fnmatch_lines(["*manifest entries matching no collected test*", "*test_no_such_property*"])


@pytest.mark.parametrize("when, device, outcomes, summary", [
    ('{ versions = { pytest = ">=1" } }', "cpu", {"xfailed": ROUNDTRIP_TESTS}, ["*unflatten returns copies (where: pytest>=1)*"]),
    ('{ versions = { pytest = "<1" } }', "cpu", {"failed": ROUNDTRIP_TESTS}, ["*don't hold on this machine*", "*where: pytest<1*"]),
    # --device reaches the conditions (these tests make no tensor on the device: no GPU needed)
    ('{ device = ["cpu"] }', "cuda", {"failed": ROUNDTRIP_TESTS}, ["*don't hold on this machine*", "*where: device cpu*"]),
    ('{ device = ["cuda"] }', "cuda", {"xfailed": ROUNDTRIP_TESTS}, ["*unflatten returns copies (where: device cuda)*"]),
])
def test_a_conditional_finding_holds_only_where_its_condition_does(python, project, when, device, outcomes, summary):
    _manifest(project, "clones_tensors", f"""
        [[finding]]
        test = "suites/test_io_roundtrip.py::test_roundtrip*"
        when = {when}
        reason = "unflatten returns copies"
        raises = "AssertionError"
        reproduction = "impl.unflatten(*impl.flatten([t]))[0] is not t"
    """)
    result = run(python, project, "suites/test_io_roundtrip.py", "--impl", "clones_tensors", "--device", device, "-rx")
    result.assert_outcomes(**outcomes)
    result.stdout.fnmatch_lines(summary)


@pytest.mark.parametrize("pattern, outcomes", [
    ('raises = "AssertionError"', {"xfailed": 1}),
    ('raises = "AssertionError"\nmatch = "not the same tensor object"', {"xfailed": 1}),
    ('raises = "TypeError"', {"failed": 1}),
    ('raises = "AssertionError"\nmatch = "^no such message"', {"failed": 1}),
])
def test_an_expected_failure_counts_only_for_its_recorded_reason(python, project, tmp_path, pattern, outcomes):
    """A test failing otherwise than its entry recorded is a FAIL in pytest's summary and the report,
    with pytest's long traceback (source lines); one failing as recorded carries Python's own (cheap)."""
    _manifest(project, "clones_tensors", _copies_entry(ROUNDTRIP_CORE, pattern))
    project.makeconftest(project.path.joinpath("conftest.py").read_text() + textwrap.dedent(f"""
        def pytest_runtest_logreport(report):
            if report.when == "call":
                open({str(tmp_path / "traceback.txt")!r}, "w").write(report.longreprtext)
    """))

    result = run(python, project, "suites/test_io_roundtrip.py::test_roundtrip[clones_tensors-core]", "--impl",
                 "clones_tensors", "-rfx")
    result.assert_outcomes(**outcomes)
    traceback = (tmp_path / "traceback.txt").read_text()
    native = traceback.startswith("Traceback (most recent call last):")
    assert native == ("xfailed" in outcomes) and (native or "\nE   " in traceback), traceback[:300]
    if "failed" in outcomes:
        result.stdout.fnmatch_lines(["*failed, but not as recorded: AssertionError: *",
                                     "*recorded (*clones_tensors.toml: finding #1): raises *", "FAILED *test_roundtrip*"])


def test_a_wrong_reason_failure_reads_as_such_in_the_report(python, project, tmp_path):
    _manifest(project, "clones_tensors", _copies_entry(ROUNDTRIP_CORE, 'raises = "TypeError"'))
    project.makeconftest(project.path.joinpath("conftest.py").read_text() + textwrap.dedent(f"""
        import json
        from ortcheck.report.collector import ResultCollector
        def pytest_configure(config):
            config._collector = ResultCollector()
            config.pluginmanager.register(config._collector)
        def pytest_unconfigure(config):
            with open({str(tmp_path / "outcomes.json")!r}, "w") as f:
                json.dump([o.__dict__ for o in config._collector.outcomes], f)
    """))
    run(python, project, "suites/test_io_roundtrip.py::test_roundtrip[clones_tensors-core]", "--impl", "clones_tensors")
    import json
    (outcome,) = json.loads((tmp_path / "outcomes.json").read_text())
    assert outcome["status"] == "fail" and outcome["detail"].startswith("failed, but not as recorded: AssertionError")


def test_unexpected_pass_of_a_manifest_entry_fails_the_run(python, project):
    _manifest(project, "clones_tensors", """
        [[finding]]
        test = "suites/test_io_schema.py::test_sizes_do_not_change_schema[[]clones_tensors-core]"
        reason = "claimed, but not true"
        raises = "AssertionError"
        reproduction = "none"
    """)
    result = run(python, project, "suites/test_io_schema.py::test_sizes_do_not_change_schema[clones_tensors-core]", "--impl", "clones_tensors")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*XPASS(strict)*"])


def test_prove_findings_judges_each_entry_whose_tests_ran_and_fails_the_run_for_one_proving_nothing(python, project):
    """``--prove-findings`` (the test command's): each entry as ``ortcheck findings --check`` judges it.
    The second entry's property draws and the entry lists no examples: xfailed in a plain run, it
    proves nothing run alone, so the run fails though no test did; the entry matching nothing is left out."""
    _manifest(project, "clones_tensors", _copies_entry(ROUNDTRIP_CORE)
              + _copies_entry("suites/test_io_roundtrip.py::test_roundtrip_deep_nesting*") + """
        [[finding]]
        test = "suites/test_io_schema.py::*"
        reason = "not run here"
        raises = "AssertionError"
        reproduction = "none"
    """)
    tests = ("suites/test_io_roundtrip.py::test_roundtrip[clones_tensors-core]",
             "suites/test_io_roundtrip.py::test_roundtrip_deep_nesting[clones_tensors]", "--impl", "clones_tensors")
    plain = run(python, project, *tests)
    plain.assert_outcomes(xfailed=2)
    proved = run(python, project, *tests, "--prove-findings")
    proved.assert_outcomes(xfailed=1, skipped=1)
    assert proved.ret == pytest.ExitCode.TESTS_FAILED
    proved.stdout.fnmatch_lines(["*the findings whose tests ran, proving themselves*",
                                 "ok  * finding #1", "FAIL  * finding #2: it has no examples and its property draws*",
                                 "1 entry whose tests did not run here left out", "1 entry failed the check"])


def test_malformed_manifest_is_a_clear_error(python, project):
    _manifest(project, "clones_tensors", """
        [[finding]]
        test = "suites/*"
        reason = "no reproduction given"
    """)
    result = run(python, project, "suites/test_io_roundtrip.py", "--impl", "clones_tensors")
    assert result.ret != 0
    assert "missing ['reproduction']" in result.stdout.str() + result.stderr.str()


def test_unknown_impl_lists_the_valid_ones(python, project):
    result = run(python, project, "suites", "--impl", "nonesuch")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown implementation 'nonesuch'; valid: eager, reference, ortmodule*"])


def test_required_impl_that_is_unavailable_is_an_error_not_a_skip(python, project):
    project.makeconftest(project.path.joinpath("conftest.py").read_text() + textwrap.dedent("""
        class Missing(controls.get("clones_tensors")):
            name = "missing"
            def unavailable_reason(self):
                return "not installed here"
        impls.register("missing", Missing)
    """))
    skipped = run(python, project, "suites/test_io_roundtrip.py", "--impl", "missing", "-rs")
    skipped.assert_outcomes(skipped=ROUNDTRIP_TESTS)
    skipped.stdout.fnmatch_lines(["*missing unavailable: not installed here*"])
    required = run(python, project, "suites/test_io_roundtrip.py", "--impl", "missing", "--require-impl", "missing")
    assert required.ret == pytest.ExitCode.USAGE_ERROR


def test_unknown_device_is_a_usage_error(python, project):
    result = run(python, project, "suites", "--device", "tpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--device: unknown device 'tpu'; valid: cpu, cuda*"])


def test_update_goldens_writes_then_the_next_run_compares_against_them(python, project, tmp_path):
    golden_dir = tmp_path / "goldens"
    args = ("suites/test_convergence.py", "-k", "mlp", "--impl", "eager", "--golden-dir", str(golden_dir))
    missing = run(python, project, *args)
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(["*parity with eager passed (float64 oracle: *), but *no golden file; record it with: "
                                  "pytest 'suites/test_convergence.py::test_convergence[[]eager-mlp[]]' --impl eager "
                                  f"--device cpu --golden-dir {golden_dir} --update-goldens"])
    named = shlex.split(missing.stdout.str().split("record it with: ")[1].splitlines()[0])
    assert named[0] == "pytest"
    run(python, project, *named[1:]).assert_outcomes(passed=1)   # the named command records the golden
    assert (golden_dir / "mlp" / "eager-cpu-float32.json").is_file()
    run(python, project, *args).assert_outcomes(passed=1)


def test_the_large_convergence_case_runs_only_nightly(python, project):
    result = run(python, project, "suites/test_convergence.py", "-k", "large", "--impl", "eager", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*nightly test: run with --nightly*"])


# a test eager passes in half a second under the dev profile: a bound of seconds leaves it room on a loaded machine
QUICK_EAGER = "suites/test_io_through_module.py::test_distinct_key_paths_stay_distinct[eager]"


def test_a_crash_and_a_hang_each_fail_one_property_and_the_run_goes_on(python, project):
    result = run(python, project, "suites/test_io_through_module.py::test_distinct_key_paths_stay_distinct",
                 "--impl", "segfaults,hangs,eager", "-n", "2", "--impl-timeout", "5")
    result.assert_outcomes(passed=1, failed=2)
    output = result.stdout.str() + result.stderr.str()
    assert "crashed while running 'suites/test_io_through_module.py::test_distinct_key_paths_stay_distinct[segfaults]'" in output
    assert "crashed while running 'suites/test_io_through_module.py::test_distinct_key_paths_stay_distinct[hangs]'" in output
    # ``hangs`` sleeps an hour in wrap: that the run finished at all is the time bound at work.


def test_a_crash_the_manifest_expects_is_an_expected_failure_that_costs_a_child_not_the_process(python, project):
    """The test recorded as crashing runs in a forked child: without xdist the run goes on in the same
    process (the next test passes), and under xdist no worker is replaced."""
    _manifest(project, "segfaults", """
        [[finding]]
        test = "suites/test_io_through_module.py::test_distinct_key_paths_stay_distinct[[]segfaults]"
        reason = "dies in wrap"
        raises = "crash"
        reproduction = "impls.get('segfaults').wrap(module)"
    """)
    tests = ("suites/test_io_through_module.py::test_distinct_key_paths_stay_distinct", "--impl", "segfaults,eager", "-rx")
    alone = run(python, project, *tests, "-p", "no:xdist")
    alone.assert_outcomes(xfailed=1, passed=1)
    alone.stdout.fnmatch_lines(["*[[]segfaults manifest[]] dies in wrap"])
    one_worker = run(python, project, *tests, "-n", "1")
    one_worker.assert_outcomes(xfailed=1, passed=1)
    assert "replacing crashed worker" not in one_worker.stdout.str() + one_worker.stderr.str()


def test_a_test_recorded_as_crashing_that_fails_otherwise_says_so_from_its_child(python, project):
    """What the child raised comes back as the test's own: here not the recorded crash, so a failure
    naming the exception and the record, with the child's traceback."""
    _manifest(project, "clones_tensors", _copies_entry(ROUNDTRIP_CORE, 'raises = "crash"'))
    result = run(python, project, "suites/test_io_roundtrip.py::test_roundtrip[clones_tensors-core]",
                 "--impl", "clones_tensors", "-p", "no:xdist")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*raised in the test's forked child:*", "*in test_roundtrip*",
                                 "*failed, but not as recorded: AssertionError*", "*recorded (*): raises crash*"])
    assert "/pluggy/" not in result.stdout.str()  # the child's traceback is the test's, not pytest's machinery


def test_a_negative_time_bound_is_a_usage_error(python, project):
    result = run(python, project, "suites/test_io_roundtrip.py", "--impl-timeout", "-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--impl-timeout must be >= 0 seconds*"])


def test_crashes_beyond_the_worker_restarts_fail_the_run_naming_the_tests_never_run(python, project):
    """xdist stops replacing crashed workers after --max-worker-restart and leaves their tests unrun:
    the plugin fails a run in which a collected test never reported."""
    capped = run(python, project, "suites/test_io_through_module.py", "-k", "distinct or python_outputs",
                 "--impl", "segfaults", "-n", "1", "--max-worker-restart", "0")
    assert capped.ret == pytest.ExitCode.TESTS_FAILED
    capped.stdout.fnmatch_lines(["*ortcheck: 2 of 3 collected tests never reported*"])


@pytest.mark.parametrize("given, kept", [(None, str(crashes.MAX_WORKER_RESTARTS)), ("0", "0"), ("7", "7")])
def test_the_plugin_raises_xdists_default_worker_restarts_and_keeps_a_given_one(given, kept):
    """xdist's default (4 per worker) would leave tests unrun where ORTModule crashes more often."""
    registered = []
    config = types.SimpleNamespace(option=types.SimpleNamespace(maxworkerrestart=given, numprocesses=None),
                                   pluginmanager=types.SimpleNamespace(register=lambda plugin, name: registered.append(plugin)))
    crashes.pytest_configure(config)
    for plugin in registered:
        plugin.pytest_unconfigure(config)  # the time bound's own records folder
    assert config.option.maxworkerrestart == kept


def test_collect_findings_drafts_a_manifest_entry_per_unexpected_failure(python, project):
    """The draft is valid manifest TOML whose glob matches the failed test, with the shrunk example."""
    from ortcheck.findings import manifest

    nodeid = "suites/test_io_roundtrip.py::test_roundtrip[clones_tensors-core]"
    drafts = project.path / "drafts" / "findings.toml"
    result = run(python, project, nodeid, "suites/test_io_roundtrip.py::test_roundtrip[eager-core]", "--impl",
                 "clones_tensors,eager", "--collect-findings", str(drafts))
    result.assert_outcomes(failed=1, passed=1)
    (finding,) = manifest.load(drafts)
    assert finding.matches(nodeid) and finding.test == "suites/test_io_roundtrip.py::test_roundtrip[[]clones_tensors-core]"
    assert finding.reason.startswith("call: ") and len(finding.reason) > len("call: ")
    assert "clones_tensors" in drafts.read_text().splitlines()[3]  # grouped under its implementation
    assert "drawn(" in finding.reproduction or "test_roundtrip" in finding.reproduction


def test_a_hang_holding_the_gil_is_killed_from_outside_and_fails_one_property_naming_its_draw(python, project):
    """The worker sits in native code holding the GIL, where pytest-timeout's timer thread could not
    fire: the watchdog kills it at the bound, xdist replaces it, and the next test (on that worker:
    -n 1) passes. The next test is a quick one, so the bound need not leave room for a slow one on a
    loaded machine (an eager layer-norm test, 5 s bound: it failed under load)."""
    nodeid = "suites/test_numerics.py::test_layernorm_is_as_accurate_as_eager"
    result = run(python, project, f"{nodeid}[holds_the_gil]", QUICK_EAGER, "--impl", "holds_the_gil,eager",
                 "-n", "1", "--impl-timeout", "10", "--hypothesis-seed", "4321")
    result.assert_outcomes(passed=1, failed=1)
    output = result.stdout.str()
    assert f"crashed while running '{nodeid}[holds_the_gil]'" in output
    assert re.search(rf"ortcheck watchdog: {re.escape(nodeid)}\[holds_the_gil\] ran past its time bound of 10 s and was "
                     r"killed from outside its process .*; last draw \(example 1\): offset=.*, width=.*, spread=.*, "
                     rf"seed=.*; replay: pytest '{re.escape(nodeid)}\[holds_the_gil\]' --hypothesis-seed=4321 "
                     r"--hypothesis-profile=dev", output)
    assert "in hold_the_gil" in output  # the Python stacks at the kill, dumped without the GIL


def test_without_xdist_the_watchdog_ends_the_run_and_says_what_it_ended(python, project):
    nodeid = "suites/test_numerics.py::test_layernorm_is_as_accurate_as_eager[holds_the_gil]"
    result = run(python, project, nodeid, "--impl", "holds_the_gil", "--impl-timeout", "3")
    assert result.ret == -watchdog.DUMP_SIGNAL
    errors = result.stderr.str()
    assert f"ortcheck watchdog: {nodeid} ran past its time bound of 3 s" in errors
    stacks = Path(re.search(r"; stacks: (\S+)", errors).group(1))
    assert "in hold_the_gil" in stacks.read_text()  # dumped by the process as it died
    assert re.search(r"replay: pytest '.*' --hypothesis-seed=\d+ --hypothesis-profile=dev", errors)


DRAWS = """
    import pathlib
    from hypothesis import given, strategies as st

    @given(st.integers())
    def test_one(x):
        with open("draws-one.txt", "a") as f:
            f.write(f"{x}\\n")

    @given(st.integers())
    def test_two(x):
        with open("draws-two.txt", "a") as f:
            f.write(f"{x}\\n")
"""


def _draws(project):
    return {name: (project.path / f"draws-{name}.txt").read_text() for name in ("one", "two")}


def test_a_random_run_prints_its_seed_and_replays_with_it_even_across_xdist_workers(python, project):
    project.makepyfile(test_draws=textwrap.dedent(DRAWS))
    first = run(python, project, "test_draws.py", "-n", "2")
    first.assert_outcomes(passed=2)
    (line,) = [line for line in first.outlines if line.startswith("ortcheck: hypothesis seed")]
    seed = re.fullmatch(r"ortcheck: hypothesis seed (\d+) \(profile dev; replay: --hypothesis-seed=(\d+) "
                        r"--hypothesis-profile=dev\)", line).group(1)
    drawn = _draws(project)
    for name in ("one", "two"):
        (project.path / f"draws-{name}.txt").unlink()
    replayed = run(python, project, "test_draws.py", "-p", "no:xdist", f"--hypothesis-seed={seed}", "-q")
    replayed.assert_outcomes(passed=2)
    assert _draws(project) == drawn  # the workers drew with the printed seed, not seeds of their own
    replayed.stdout.fnmatch_lines([f"ortcheck: hypothesis seed {seed} (profile dev*"])  # -q: after the results


def test_a_derandomized_run_says_it_has_no_seed(python, project):
    project.makepyfile(test_draws=textwrap.dedent(DRAWS))
    result = run(python, project, "test_draws.py", "--hypothesis-profile", "ci", "--hypothesis-seed", "5")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["ortcheck: hypothesis derandomized (profile ci): every run draws the same examples; "
                                 "--hypothesis-seed=5 has no effect"])


FAILS_ON_LARGE = """
from hypothesis import given, settings, strategies as st


@settings(derandomize=True, database=None)
@given(st.integers(min_value=0))
def test_small(n):
    assert n < 1000, f"drew {n}"
"""


@pytest.mark.parametrize("flag", [(), ("--no-shrink",)], ids=["shrunk", "no-shrink"])
def test_no_shrink_reports_the_first_failing_draw_as_drawn(python, project, flag):
    project.makepyfile(test_large=FAILS_ON_LARGE)
    result = run(python, project, "test_large.py", "-p", "no:xdist", *flag)
    result.assert_outcomes(failed=1)
    drawn = int(re.search(r"drew (\d+)", result.stdout.str()).group(1))
    assert (drawn == 1000) == (not flag)  # shrinking finds the boundary; --no-shrink keeps the draw
