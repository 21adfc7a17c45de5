"""`ortcheck run` end to end, and the profile selection it relies on."""
import json

import pytest

from ortcheck import cli, profiles, run


def ortcheck(python, *args, cwd):
    return python.run("-m", "ortcheck.cli", *args, cwd=cwd)


def test_run_prints_the_matrix_and_writes_both_reports(python, tmp_path):
    result = ortcheck(python, "run", "--impl", "eager", "-k", "test_roundtrip and core", "--profile", "dev", "--report-dir",
                      str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "ortcheck conformance matrix" in result.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    cells = summary["conformance"]["cells"]
    assert summary["conformance"]["ok"] and {c["impl"] for c in cells} == {"eager"}
    assert {c["property"] for c in cells} >= {"suites/test_io_roundtrip.py::test_roundtrip[core]"}
    report = (tmp_path / "summary.md").read_text()
    assert "### `suites/test_io_roundtrip.py`" in report and "| `test_roundtrip[core]` | pass |" in report
    seed = summary["environment"]["hypothesis_seed"]  # drawn by the run (dev is random), printed, recorded
    line = f"hypothesis seed {seed} (profile dev; replay: --hypothesis-seed={seed} --hypothesis-profile=dev)"
    assert isinstance(seed, int) and f"ortcheck: {line}" in result.stdout and f"- hypothesis: {line}" in report


def test_run_writes_the_memory_optimizer_plan_table(python, tmp_path):
    result = ortcheck(python, "run", "--impl", "reference", "-k", "bloom_with_dropout and 1", "--profile", "dev",
                      "-n", "0", "--report-dir", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    summary = (tmp_path / "summary.md").read_text()
    assert "## Memory optimizer (recompute)" in summary
    assert "| Plan | Status | Configs | Freq | Applied | Max Saving (Bytes) | Saving Symbolic (Bytes) |" in summary
    assert "| ON | `Gelu+:1:-1` | 2 | 2 |" in summary
    assert json.loads((tmp_path / "summary.json").read_text())["memory_plans"]


def test_run_fails_when_nothing_ran(python, tmp_path):
    """In this process (-n 0; test_run_prints_the_matrix_and_writes_both_reports runs workers): workers
    would each collect every suite first."""
    result = ortcheck(python, "run", "--impl", "eager", "-k", "no_such_property", "-n", "0", "--report-dir", str(tmp_path),
                      cwd=tmp_path)
    assert result.returncode == 1
    assert "no tests ran" in result.stdout


@pytest.mark.parametrize("args, message", [
    (["run", "--impl", "nonesuch"], "unknown implementation 'nonesuch'; valid: eager, reference, ortmodule, bitsandbytes, all, available, -NAME"),
    (["run", "--device", "tpu"], "invalid choice: 'tpu'"),
    (["run", "--bogus"], "unrecognized arguments: --bogus"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_bad_arguments_name_what_was_wrong(python, tmp_path, args, message):
    result = ortcheck(python, *args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr


def test_profile_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(profiles.ENV_VAR, raising=False)
    assert profiles.default_profile() == "dev"
    monkeypatch.setenv("CI", "true")
    assert profiles.default_profile() == "ci"
    monkeypatch.setenv(profiles.ENV_VAR, "nightly")
    assert profiles.default_profile() == "nightly"
    monkeypatch.setenv(profiles.ENV_VAR, "weekly")
    with pytest.raises(ValueError, match="valid: dev, ci, nightly"):
        profiles.default_profile()


def test_ci_profile_is_derandomized_with_more_examples_than_dev_and_nightly_1000():
    from hypothesis import settings

    ci, dev = settings.get_profile("ci"), settings.get_profile("dev")
    assert ci.derandomize and ci.max_examples > dev.max_examples
    assert settings.get_profile("nightly").max_examples >= 1000


@pytest.mark.parametrize("profile, nightly", [("nightly", True), ("dev", False), (None, False)])
def test_the_nightly_profile_also_runs_the_tests_marked_nightly(tmp_path, profile, nightly):
    args = cli.build_parser().parse_args(["run", "--suites", str(tmp_path), *(["--profile", profile] if profile else [])])
    assert ("--nightly" in run.pytest_args(args)) == nightly
