"""``ortcheck history`` over real report folders: six nights of ``ortcheck run`` on a small selection,
a positive control introduced and removed between them under one implementation name, each change
named exactly once by ``ortcheck history events``."""
import json
import os
import shutil
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROUNDTRIP, THROUGH = "suites/test_io_roundtrip.py::test_roundtrip[core]", "suites/test_io_through_module.py::test_nested_io_through_module[core]"
BOTH, ROUNDTRIP_ONLY = "(test_roundtrip or test_nested_io_through_module) and core", "test_roundtrip and core"
# per night: the control standing in for the implementation (None: the correct one) and the selection
NIGHTS = [(None, BOTH), ("clones_tensors", BOTH), (None, BOTH), ("clones_tensors", BOTH), (None, ROUNDTRIP_ONLY),
          ("outputs_off_by_one_permille", BOTH)]
EXPECTED = {  # night -> its events (kind, property)
    1: [],
    2: [("new_fail", ROUNDTRIP)],
    3: [("fixed", ROUNDTRIP)],
    4: [("flaky", ROUNDTRIP)],
    5: [("fixed", ROUNDTRIP), ("missing", THROUGH)],
    6: [("new_fail", THROUGH)],
}


def test_six_nights_of_ortcheck_run_name_each_change_once(python, tmp_path):
    shutil.copytree(REPO / "suites", tmp_path / "suites")
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    # an implementation declared as a user's package declares it (an ``ortcheck.impls`` entry point),
    # which is eager, or the night's control
    site = tmp_path / "site"
    (site / "subject-1.0.dist-info").mkdir(parents=True)
    (site / "subject-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: subject\nVersion: 1.0\n")
    (site / "subject-1.0.dist-info" / "entry_points.txt").write_text("[ortcheck.impls]\nsubject = subject:implementation\n")
    (site / "subject.py").write_text(textwrap.dedent("""
        import os
        import controls
        from ortcheck.impls.eager import EagerImpl

        def implementation():
            fault = os.environ.get("NIGHT_FAULT")
            return (controls.get(fault) if fault else EagerImpl)()
    """))
    history = tmp_path / "nights.sqlite"
    found = {}
    for night, (fault, selection) in enumerate(NIGHTS, 1):
        env = {**_env(site), **({"NIGHT_FAULT": fault} if fault else {})}
        ran = python.run("-m", "ortcheck.cli", "run", "--impl", "subject", "--suites", "suites", "-k", selection,
                         "-n", "0", "--profile", "dev", "--seed", "7", "--report-dir", f"night-{night}",
                         "--history", str(history), cwd=tmp_path, env=env)
        assert f"run {night} in" in ran.stdout, ran.stdout + ran.stderr
        events = python.run("-m", "ortcheck.cli", "history", "events", "--history", str(history), "--format", "json",
                            "--fail-on", "", cwd=tmp_path, env=_env(site))
        assert events.returncode == 0, events.stdout + events.stderr
        found[night] = sorted((e["kind"], e["property"]) for c in json.loads(events.stdout) for e in c["events"])
    assert found == EXPECTED


def _env(site: Path) -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)]), "CI": ""}
