"""The plugin end to end, through pytester: mutants are caught, manifests are strict, bad options fail clearly."""
import dataclasses
import shutil
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MUTANTS = ["ClonesTensors", "SizeSensitiveSchema", "DtypeBlindSchema", "OffByOneUlp", "GradientsOffByOnePermille",
           "ReexportsOnNewSizes"]


@pytest.fixture
def project(pytester):
    """A pytester folder holding the suites, the goldens and a conftest that registers the mutants."""
    shutil.copytree(REPO / "suites", pytester.path / "suites")
    shutil.copytree(REPO / "golden", pytester.path / "golden")
    pytester.makeconftest(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO)!r})
        from ortcheck import impls
        from tests.harness import mutants
        for name in {MUTANTS!r}:
            cls = getattr(mutants, name)
            impls.register(cls.name, cls)
    """))
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    return pytester


def run(project, *args):
    return project.runpytest_subprocess("--hypothesis-profile", "dev", *args)


@pytest.mark.parametrize("impl_name, suite, test", [
    ("clones_tensors", "suites/test_io_roundtrip.py", "test_roundtrip[clones_tensors-core]"),
    ("size_sensitive", "suites/test_io_schema.py", "test_sizes_do_not_change_schema[size_sensitive-core]"),
    ("dtype_blind", "suites/test_io_schema.py", "test_schema_sees_each_change[dtype_blind-dtype]"),
    ("drifting", "suites/test_io_through_module.py", "test_nested_io_through_module[drifting-core]"),
    ("grad_scaled", "suites/test_grad_parity.py", "test_outputs_loss_and_gradients_match_eager"),
    ("grad_scaled", "suites/test_grad_parity.py", "test_bloom_lm_trains_20_steps_like_eager"),
])
def test_each_mutant_is_caught_by_its_property(project, impl_name, suite, test):
    result = run(project, f"{suite}::{test}", "--impl", impl_name)
    result.assert_outcomes(failed=1)


def test_a_transition_failure_shrinks_to_a_replayable_script(project):
    """Over-exporting mutant: outputs stay right, the counter check fails, the shrunk sequence prints as code."""
    result = run(project, "suites/test_transitions.py::test_transitions[reexports_on_new_sizes-sizes]",
                 "--impl", "reexports_on_new_sizes")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*exports: observed 2, the transition contract predicts 1*",
        "*replay(impls.get('reexports_on_new_sizes'), Options(), [*",
        "*    Forward(),",
        "*    Forward(sizes='other'),",
        "*])",
    ])


def test_a_wrong_prediction_fails_the_counter_check():
    """The check compares, not echoes: a contract that ignores schema changes disagrees with reference."""
    from ortcheck import impls
    from ortcheck.impls import Options
    from ortcheck.strategies.transitions import Forward, Prediction, Scenario
    from reference.transitions import Graphs

    class IgnoresSchemas(Graphs):
        def step(self, current, grad_enabled=True):
            built = self.built_for(current.training)
            return super().step(current if built is None else dataclasses.replace(current, schema=built.schema), grad_enabled)

    scenario = Scenario(impls.get("reference"), Options(), Prediction(IgnoresSchemas()))
    scenario.apply(Forward())
    with pytest.raises(AssertionError, match="exports: observed 2, the transition contract predicts 1"):
        scenario.apply(Forward(rank=3))


def test_eager_passes_the_same_suites(project):
    result = run(project, "suites", "--impl", "eager")
    assert result.ret == 0
    assert result.parseoutcomes()["passed"] >= 5


def _manifest(project, impl_class, body):
    path = project.path / f"{impl_class}.toml"
    path.write_text(textwrap.dedent(body))
    project.makeconftest(project.path.joinpath("conftest.py").read_text() + textwrap.dedent(f"""
        from pathlib import Path
        mutants.{impl_class}.manifest_path = lambda self: Path({str(path)!r})
    """))


def test_manifest_entry_turns_a_known_failure_into_xfail_and_reports_unmatched(project):
    _manifest(project, "ClonesTensors", """
        [[finding]]
        test = "suites/test_io_roundtrip.py::test_roundtrip*"
        reason = "unflatten returns copies"
        reproduction = "impl.unflatten(*impl.flatten([t]))[0] is not t"

        [[finding]]
        test = "suites/test_io_roundtrip.py::test_no_such_property*"
        reason = "stale"
        reproduction = "none"
    """)
    result = run(project, "suites/test_io_roundtrip.py", "--impl", "clones_tensors", "-rx")
    result.assert_outcomes(xfailed=5)
    result.stdout.fnmatch_lines(["*manifest entries matching no collected test*", "*test_no_such_property*"])


def test_unexpected_pass_of_a_manifest_entry_fails_the_run(project):
    _manifest(project, "ClonesTensors", """
        [[finding]]
        test = "suites/test_io_schema.py::test_sizes_do_not_change_schema[[]clones_tensors-core]"
        reason = "claimed, but not true"
        reproduction = "none"
    """)
    result = run(project, "suites/test_io_schema.py::test_sizes_do_not_change_schema[clones_tensors-core]", "--impl", "clones_tensors")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*XPASS(strict)*"])


def test_malformed_manifest_is_a_clear_error(project):
    _manifest(project, "ClonesTensors", """
        [[finding]]
        test = "suites/*"
        reason = "no reproduction given"
    """)
    result = run(project, "suites/test_io_roundtrip.py", "--impl", "clones_tensors")
    assert result.ret != 0
    assert "missing ['reproduction']" in result.stdout.str() + result.stderr.str()


def test_unknown_impl_lists_the_valid_ones(project):
    result = run(project, "suites", "--impl", "nonesuch")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown implementation 'nonesuch'; valid: eager, reference, ortmodule*"])


def test_required_impl_that_is_unavailable_is_an_error_not_a_skip(project):
    project.makeconftest(project.path.joinpath("conftest.py").read_text() + textwrap.dedent("""
        class Missing(mutants.ClonesTensors):
            name = "missing"
            def unavailable_reason(self):
                return "not installed here"
        impls.register("missing", Missing)
    """))
    skipped = run(project, "suites/test_io_roundtrip.py", "--impl", "missing", "-rs")
    skipped.assert_outcomes(skipped=5)
    skipped.stdout.fnmatch_lines(["*missing unavailable: not installed here*"])
    required = run(project, "suites/test_io_roundtrip.py", "--impl", "missing", "--require-impl", "missing")
    assert required.ret == pytest.ExitCode.USAGE_ERROR


def test_unknown_device_is_a_usage_error(project):
    result = run(project, "suites", "--device", "tpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--device 'tpu' is not valid; valid: cpu, cuda*"])


def test_update_goldens_writes_then_the_next_run_compares_against_them(project, tmp_path):
    golden_dir = tmp_path / "goldens"
    args = ("suites/test_convergence.py", "-k", "mlp", "--impl", "eager", "--golden-dir", str(golden_dir))
    missing = run(project, *args)
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(["*no golden file (record one with --update-goldens*"])
    run(project, *args, "--update-goldens").assert_outcomes(passed=1)
    assert (golden_dir / "mlp" / "eager-cpu-float32.json").is_file()
    run(project, *args).assert_outcomes(passed=1)


def test_the_large_convergence_case_runs_only_nightly(project):
    result = run(project, "suites/test_convergence.py", "-k", "large", "--impl", "eager", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*nightly test: run with --nightly*"])
