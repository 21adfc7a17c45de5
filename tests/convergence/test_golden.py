"""Golden files: exact round trip, clear errors for every kind of damage, atomic and parity-gated updates."""
import json
import os
import shlex

import pytest

from ortcheck import cli, impls
from ortcheck.convergence import cases, golden as goldens, workflow
from ortcheck.convergence.curves import CaseRun, Curve
from ortcheck.convergence.tolerance import FP32_PARITY
from controls.gradients import GradientsOffByOnePermille

CASE = "mlp"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A golden recorded through the workflow (eager: the cheapest implementation)."""
    root = tmp_path_factory.mktemp("golden")
    outcome = workflow.check(cases.get(CASE), impls.get("eager"), golden_root=root, update=True)
    assert outcome.updated
    return outcome.golden_path


@pytest.fixture
def golden_file(recorded, tmp_path):
    path = tmp_path / recorded.name
    path.write_text(recorded.read_text())
    return path


def test_metrics_round_trip_at_full_precision(golden_file):
    golden = goldens.load(golden_file)
    tricky = CaseRun("c", "i", "cpu", [Curve(0, {"loss": [0.1 + 0.2, 1e-310, 2.0 ** -30], "grad_norm": [1.0] * 3,
                                                  "lr": [1 / 3] * 3})], {}, {})
    goldens.write(golden_file, goldens.Golden(tricky, golden.config, FP32_PARITY))
    assert goldens.load(golden_file).run.curves[0].metrics == tricky.curves[0].metrics


def damage(path, edit):
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("corrupt, message", [
    (lambda p: p.write_text(p.read_text()[: len(p.read_text()) // 2]), "not valid JSON"),
    (lambda p: p.write_text("{'schema_version': 1}"), "not valid JSON"),
    (lambda p: p.write_text("[]"), "expected a JSON object"),
    (lambda p: p.write_text(p.read_text().replace('"loss": [', '"loss": [NaN, ', 1)), "NaN is not allowed"),
    (lambda p: p.write_text(p.read_text().replace('"loss": [', '"loss": [Infinity, ', 1)), "Infinity is not allowed"),
    (lambda p: p.write_text(p.read_text().replace('"loss": [', '"loss": [1e999, ', 1)), r"curves\[0\].loss\[0\] is inf"),
    (lambda p: damage(p, lambda d: d.pop("fingerprint")), "missing field.*fingerprint"),
    (lambda p: damage(p, lambda d: d["curves"][0].pop("grad_norm")), r"curves\[0\] is missing grad_norm"),
    (lambda p: damage(p, lambda d: d["curves"][0]["lr"].pop()), "metrics of different lengths"),
    (lambda p: damage(p, lambda d: d["curves"][0]["loss"].__setitem__(3, "0.5")), r"loss\[3\] is '0.5'"),
    (lambda p: damage(p, lambda d: d.__setitem__("schema_version", 99)), "schema_version 99 is not supported"),
    (lambda p: damage(p, lambda d: d["tolerances"].__setitem__("kind", "vibes")), "tolerances is invalid"),
    (lambda p: damage(p, lambda d: d.__setitem__("curves", [])), "curves must be a non-empty list"),
])
def test_a_damaged_golden_gives_an_error_naming_file_and_field(golden_file, corrupt, message):
    corrupt(golden_file)
    with pytest.raises(goldens.GoldenError, match=message) as error:
        goldens.load(golden_file)
    assert str(golden_file) in str(error.value)


def test_an_interrupted_write_leaves_the_old_golden_whole(golden_file, monkeypatch):
    before = golden_file.read_bytes()
    golden = goldens.load(golden_file)

    def crash(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        goldens.write(golden_file, golden)
    assert golden_file.read_bytes() == before
    assert sorted(p.name for p in golden_file.parent.iterdir()) == [golden_file.name]  # no temporary left behind


def test_no_golden_is_written_when_parity_fails(recorded):
    before = recorded.read_bytes()
    outcome = workflow.check(cases.get(CASE), GradientsOffByOnePermille(), golden_root=recorded.parents[1], update=True)
    assert not outcome.parity.ok and not outcome.updated
    assert not goldens.path_for(recorded.parents[1], CASE, GradientsOffByOnePermille.name, "cpu").exists()
    assert recorded.read_bytes() == before


def test_a_missing_golden_fails_after_the_parity_verdict_naming_the_command(tmp_path):
    outcome = workflow.check(cases.get(CASE), impls.get("eager"), golden_root=tmp_path, record_command="record-me --now")
    [failure] = outcome.failures
    assert failure.startswith("parity with eager passed (float64 oracle: worst error ")
    assert failure.endswith(f"but {goldens.path_for(tmp_path, CASE, 'eager', 'cpu')}: no golden file; "
                            "record it with: record-me --now")


def test_a_parity_failure_comes_first_and_no_command_records_its_golden(tmp_path):
    outcome = workflow.check(cases.get(CASE), GradientsOffByOnePermille(), golden_root=tmp_path, record_command="record-me")
    *parity, golden = outcome.failures
    assert parity and all(f.startswith("parity with eager: ") for f in parity)
    assert "no golden file" in golden and "record-me" not in golden and "passed" not in " ".join(outcome.failures)


def test_cli_diff_without_a_golden_names_the_update_that_records_it(tmp_path, capsys):
    diff = ["golden", "diff", "--case", CASE, "--impl", "eager", "--golden-dir", str(tmp_path)]
    assert cli.main(diff) == 1
    out = capsys.readouterr().out
    assert "parity with eager passed" in out and "no golden file; record it with: ortcheck golden update" in out
    named = shlex.split(out.split("record it with: ")[1].splitlines()[0])
    assert named[0] == "ortcheck" and cli.main(named[1:]) == 0   # the command it names records the golden
    capsys.readouterr()
    assert cli.main(diff) == 0 and "[blocking (same stack)]" in capsys.readouterr().out


def test_a_golden_from_another_stack_is_advisory(recorded):
    data = json.loads(recorded.read_text())
    data["fingerprint"]["torch"] = "0.0.1"
    data["curves"][0]["loss"][5] *= 1.5  # would fail if it were blocking
    other = recorded.parents[1] / "other"
    target = goldens.path_for(other, CASE, "eager", "cpu")
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(data))
    outcome = workflow.check(cases.get(CASE), impls.get("eager"), golden_root=other)
    assert not outcome.against_golden.ok and not outcome.blocking
    assert "torch: '0.0.1' ->" in outcome.advisory and outcome.failures == []


def _another(field, value):
    """A value of ``field`` unlike the one this machine recorded (CI machines differ in all three)."""
    if field == "cpu_capability":
        return "DEFAULT" if value != "DEFAULT" else "AVX2"
    return value + 1


@pytest.mark.parametrize("field", ["cpu_capability", "threads", "cpu_count"])
def test_a_golden_differing_only_in_what_the_tolerance_covers_blocks(recorded, tmp_path, field):
    target = goldens.path_for(tmp_path, CASE, "eager", "cpu")
    target.parent.mkdir(parents=True)
    data = json.loads(recorded.read_text())
    data["fingerprint"][field] = _another(field, data["fingerprint"][field])
    data["curves"][0]["loss"][5] *= 1 + 1e-4  # beyond the window: must fail, since the tier blocks
    target.write_text(json.dumps(data))
    outcome = workflow.check(cases.get(CASE), impls.get("eager"), golden_root=tmp_path)
    assert outcome.blocking and outcome.tier.startswith(workflow.COVERED_STACK) and field in outcome.tier
    assert any("step 5" in f for f in outcome.failures)


@pytest.mark.parametrize("field", ["onnxruntime", "device", "dtype", "machine", "kernels"])
def test_a_golden_from_other_libraries_or_hardware_is_advisory(recorded, tmp_path, field):
    target = goldens.path_for(tmp_path, CASE, "eager", "cpu")
    target.parent.mkdir(parents=True)
    data = json.loads(recorded.read_text())
    data["fingerprint"][field] = "elsewhere"
    target.write_text(json.dumps(data))
    outcome = workflow.check(cases.get(CASE), impls.get("eager"), golden_root=tmp_path)
    assert not outcome.blocking and outcome.tier.startswith(workflow.ADVISORY) and field in outcome.advisory


def test_a_drifted_golden_on_the_same_stack_blocks(recorded, tmp_path):
    target = goldens.path_for(tmp_path, CASE, "eager", "cpu")
    target.parent.mkdir(parents=True)
    damage_free = json.loads(recorded.read_text())
    damage_free["curves"][0]["loss"][5] *= 1 + 1e-4
    target.write_text(json.dumps(damage_free))
    outcome = workflow.check(cases.get(CASE), impls.get("eager"), golden_root=tmp_path)
    assert outcome.blocking and outcome.tier == workflow.SAME_STACK and any("step 5" in f for f in outcome.failures)


def test_cli_update_then_diff_round_trips(tmp_path, capsys):
    assert cli.main(["golden", "update", "--case", CASE, "--impl", "eager", "--golden-dir", str(tmp_path)]) == 0
    assert cli.main(["golden", "diff", "--case", CASE, "--impl", "eager", "--golden-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "[blocking (same stack)]" in out and "result: within tolerance" in out
    assert out.count(" loss ") == cases.get(CASE).training.steps  # one row per step and metric


def test_cli_diff_on_a_corrupted_golden_fails_with_the_reason(tmp_path, capsys):
    path = goldens.path_for(tmp_path, CASE, "eager", "cpu")
    path.parent.mkdir(parents=True)
    path.write_text('{"schema_version": 1, "case": "mlp"')
    assert cli.main(["golden", "diff", "--case", CASE, "--impl", "eager", "--golden-dir", str(tmp_path)]) == 1
    assert "not valid JSON" in capsys.readouterr().out


def test_cli_rejects_an_unknown_case(capsys):
    with pytest.raises(SystemExit):
        cli.main(["golden", "diff", "--case", "nope"])
    assert "invalid choice: 'nope'" in capsys.readouterr().err


def test_every_golden_file_belongs_to_a_registered_implementation_and_a_case_it_can_run():
    """The golden set follows the registry: a removed implementation or case leaves no orphan, and no
    golden claims a case its implementation is n/a for."""
    folders = {cases.get(name).golden_folder: cases.get(name) for name in cases.names()}
    stray = []
    for path in sorted(workflow.GOLDEN_ROOT.glob("*/*.json")):
        impl_name, device, _ = path.stem.split("-")
        case = folders.get(path.parent.name)
        if case is None or impl_name not in impls.names() or device not in impls.DEVICES \
                or case.lacking(type(impls.get(impl_name)).CAPABILITIES):
            stray.append(str(path.relative_to(workflow.GOLDEN_ROOT)))
    assert not stray, f"goldens of no registered implementation, case or device, or of an n/a case: {stray}"


def test_cli_update_leaves_out_the_cases_an_implementation_lacks_a_capability_for(tmp_path, capsys):
    assert cli.main(["golden", "update", "--case", "bloom_lm_recompute1", "--impl", "eager",
                     "--golden-dir", str(tmp_path)]) == 0
    assert "bloom_lm_recompute1: n/a: eager lacks capability recompute" in capsys.readouterr().out
    assert not list(tmp_path.rglob("*.json"))
