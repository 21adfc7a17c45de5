"""Shards (`ortcheck run --shard K/N`, pytest-split) and `ortcheck report merge`."""
import json
from pathlib import Path

import pytest

from ortcheck import cli
from ortcheck.report import merge

REPO = Path(__file__).resolve().parents[2]


def ortcheck(python, *args, cwd):
    return python.run("-m", "ortcheck.cli", *args, cwd=cwd)


def _collected(python, *args) -> list[str]:
    result = python.run("-m", "pytest", "--collect-only", "-q", "suites", "--impl", "eager,reference", "-p", "no:randomly",
                        *args, cwd=REPO)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return [line for line in result.stdout.splitlines() if line.startswith("suites/") and "::" in line]  # test ids only


def test_every_test_lands_in_exactly_one_of_three_shards(python):
    everything = _collected(python)
    shards = [_collected(python, "--splits", "3", "--group", str(k), "--durations-path", str(REPO / ".test_durations"),
                         "--splitting-algorithm", "least_duration") for k in (1, 2, 3)]
    assert sum(map(len, shards)) == len(everything)
    assert sorted(item for shard in shards for item in shard) == sorted(everything)
    assert all(shards), "a shard came out empty"


def test_three_merged_shards_give_the_unsharded_matrix(python, tmp_path):
    common = ["run", "--impl", "eager", "-k", "roundtrip", "--profile", "dev", "-n", "0", "--seed", "0"]
    for k in (1, 2, 3):
        result = ortcheck(python, *common, "--shard", f"{k}/3", "--report-dir", str(tmp_path / f"shard{k}"), cwd=tmp_path)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert ortcheck(python, *common, "--report-dir", str(tmp_path / "whole"), cwd=tmp_path).returncode == 0
    merged = ortcheck(python, "report", "merge", *(str(tmp_path / f"shard{k}") for k in (1, 2, 3)), "--out",
                      str(tmp_path / "merged"), cwd=tmp_path)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    summaries = {name: json.loads((tmp_path / name / "summary.json").read_text()) for name in ("merged", "whole")}
    assert summaries["merged"]["conformance"] == summaries["whole"]["conformance"]
    report = (tmp_path / "merged" / "summary.md").read_text()
    assert report.index("## Counts") < report.index("## Failures") < report.index("### `suites/test_io_roundtrip.py`")


def _summary(folder: Path, outcomes, impl="eager", shard=None, torch="2.13.0", machine="CPU A", selection="") -> Path:
    folder.mkdir(parents=True)
    environment = {"impl": impl, "torch": torch, "machine": machine, "shard": shard, "selection": selection}
    cells = [{"property": p, "impl": i, "status": s, "detail": ""} for p, i, s in outcomes]
    (folder / "summary.json").write_text(json.dumps({"environment": environment, "outcomes": cells,
                                                     "conformance": {}, "convergence": [], "memory_plans": []}))
    return folder


def test_two_environments_merge_into_one_matrix_naming_where_each_column_ran(tmp_path):
    modern = _summary(tmp_path / "modern", [("suites/test_a.py::test_x", "reference", "pass"),
                                            ("suites/test_a.py::test_x", "eager", "pass")], impl="eager,reference")
    legacy = _summary(tmp_path / "ort119", [("suites/test_a.py::test_x", "ortmodule", "expected-fail"),
                                            ("suites/test_a.py::test_x", "eager", "pass")],
                      impl="ortmodule", torch="2.4.1", machine="CPU B")
    assert cli.main(["report", "merge", str(modern), str(legacy), "--out", str(tmp_path / "out")]) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["conformance"]["impls"] == ["eager", "ortmodule", "reference"]
    assert summary["columns"]["ortmodule"] == ["torch 2.4.1 on CPU B"]
    assert summary["columns"]["eager"] == ["torch 2.13.0 on CPU A", "torch 2.4.1 on CPU B"]


@pytest.mark.parametrize("case, message", [
    ("disagree", "suites/test_a.py::test_x \\(eager\\) is pass in .*one but fail in .*two, on the same machine "
                 "\\(CPU A\\): a flaky verdict"),
    ("twice", "shard 1/2 twice: .*one and .*two"),
    ("missing", "shard\\(s\\) 2/3, 3/3 of the eager run on torch 2.13.0 missing"),
    ("other_selection", "shard\\(s\\) 2/2 of the eager run on torch 2.13.0 missing"),
    ("no_summary", "nothing: no summary.json"),
])
def test_inconsistent_inputs_are_refused_naming_them(tmp_path, case, message):
    item = "suites/test_a.py::test_x"
    if case == "disagree":
        inputs = [_summary(tmp_path / "one", [(item, "eager", "pass")]),
                  _summary(tmp_path / "two", [(item, "eager", "fail")])]
    elif case == "twice":
        inputs = [_summary(tmp_path / "one", [(item, "eager", "pass")], shard="1/2"),
                  _summary(tmp_path / "two", [(item, "eager", "pass")], shard="1/2")]
    elif case == "other_selection":  # shard 1 of two different runs, on two machines: both runs lack shard 2
        inputs = [_summary(tmp_path / "one", [(item, "eager", "pass")], shard="1/2", selection="-k 'a'"),
                  _summary(tmp_path / "two", [(item, "eager", "pass")], shard="1/2", selection="-k 'b'", machine="B")]
    elif case == "missing":
        inputs = [_summary(tmp_path / "one", [(item, "eager", "pass")], shard="1/3")]
    else:
        inputs = [tmp_path / "nothing"]
    with pytest.raises(merge.MergeError, match=message):
        merge.merge(merge.load(inputs))


@pytest.mark.parametrize("spec", ["0/3", "4/3", "1", "a/b", "1/0"])
def test_a_malformed_shard_is_refused_by_name(python, tmp_path, spec):
    result = ortcheck(python, "run", "--shard", spec, cwd=tmp_path)
    assert result.returncode == 2 and "--shard wants K/N with 1 <= K <= N" in result.stderr


def test_shards_of_one_run_may_come_from_different_machines(tmp_path):
    item = "suites/test_a.py::test_x"
    inputs = [_summary(tmp_path / "one", [(item, "eager", "pass")], shard="1/2", machine="A"),
              _summary(tmp_path / "two", [(item + "2", "eager", "pass")], shard="2/2", machine="B")]
    assert len(merge.merge(merge.load(inputs))["outcomes"]) == 2


def test_a_gpu_run_gets_columns_of_its_own(tmp_path):
    item = "suites/test_convergence.py::test_convergence[mlp]"
    cpu = _summary(tmp_path / "cpu", [(item, "reference", "pass")])
    gpu = _summary(tmp_path / "gpu", [(item, "reference", "fail")], machine="GPU box")
    summary = json.loads((gpu / "summary.json").read_text())
    summary["environment"]["device"] = "cuda"
    (gpu / "summary.json").write_text(json.dumps(summary))
    merged = merge.merge(merge.load([cpu, gpu]))
    assert merged["conformance"]["impls"] == ["reference", "reference@cuda"]
    assert merged["columns"]["reference@cuda"] == ["torch 2.13.0 on GPU box"]


def test_a_fleet_sees_on_which_machines_each_finding_held(tmp_path):
    """A finding strict on machine A that passes on B (a strict XPASS: fail) is machine-specific;
    the merge keeps both verdicts, shows the worse in the matrix and names the machines."""
    specific, everywhere = "suites/test_a.py::test_x", "suites/test_a.py::test_y"
    amd = _summary(tmp_path / "amd", [(specific, "reference", "expected-fail"), (everywhere, "reference", "expected-fail")],
                   machine="AMD EPYC (avx512f)")
    intel = _summary(tmp_path / "intel", [(specific, "reference", "fail"), (everywhere, "reference", "expected-fail")],
                     machine="Intel Xeon (amx)")
    assert cli.main(["report", "merge", str(amd), str(intel), "--out", str(tmp_path / "out")]) == 1  # a fail
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["findings_by_machine"] == [
        {"property": specific, "impl": "reference", "held_on": ["AMD EPYC (avx512f)"], "not_on": {"Intel Xeon (amx)": "fail"}},
        {"property": everywhere, "impl": "reference", "held_on": ["AMD EPYC (avx512f)", "Intel Xeon (amx)"], "not_on": {}}]
    assert {o["property"]: o["status"] for o in summary["outcomes"]} == {specific: "fail", everywhere: "expected-fail"}
    text = (tmp_path / "out" / "summary.md").read_text()
    assert "1 finding(s) held on every machine; 1 on some only." in text
    assert "| reference | `suites/test_a.py::test_x` | AMD EPYC (avx512f) | Intel Xeon (amx) (fail) |" in text
